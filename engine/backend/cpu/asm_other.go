//go:build !amd64

package cpu

// useAsm: the assembly loops exist on amd64 only.
var useAsm = false

func expVector(x []float32) int { return 0 }

func vectorLen(n int) int { return 0 }

// The vector loops are only called on a positive vectorLen, never here.

func vectorMax(x []float32, n8 int) float32 { panic("cpu: no vector loops") }

func vectorSub(x []float32, n8 int, c float32) { panic("cpu: no vector loops") }

func vectorMul(x []float32, n8 int, c float32) { panic("cpu: no vector loops") }

func vectorSubMul(x []float32, n8 int, c, d float32) { panic("cpu: no vector loops") }

func vectorAdd(z, x, y []float32, n8 int) { panic("cpu: no vector loops") }

func vectorRope(dst, src, cos, sin []float32, half, n8 int, sign float32) {
	panic("cpu: no vector loops")
}

func vectorNeg(dst, src []float32, n8 int) { panic("cpu: no vector loops") }

func vectorSwiGLU(out, gate, up, e []float32, n8 int) { panic("cpu: no vector loops") }

func vectorSwiGLUBack(dgate, dup, dout, gate, up, e []float32, n8 int) {
	panic("cpu: no vector loops")
}

func vectorRMSScale(y, x, w []float32, n8 int, r float32) { panic("cpu: no vector loops") }

func vectorRMSBack(dx, x, w, dy []float32, n8 int, r, k float32) { panic("cpu: no vector loops") }

func vectorRMSWeight(dw, dy, x []float32, n8 int, r float32) { panic("cpu: no vector loops") }

func vectorToBF16(dst []uint16, src []float32, n16 int) { panic("cpu: no vector loops") }
