package sokoban

import (
	"fmt"
	"testing"
)

// BenchmarkGenerate measures level generation (Reset) for RAGEN's two room
// shapes: SimpleSokoban (6×6, one box) and LargerSokoban's size with the
// default search depth (8×8, two boxes).
func BenchmarkGenerate(b *testing.B) {
	for _, shape := range [][3]int{{6, 6, 1}, {8, 8, 2}} {
		b.Run(fmt.Sprintf("%dx%d_%dbox", shape[0], shape[1], shape[2]), func(b *testing.B) {
			e := newEnv(b, shape[0], shape[1], shape[2])
			for i := 0; i < b.N; i++ {
				if _, err := e.Reset(int64(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStep measures environment steps per second on 6×6 levels,
// cycling the four actions and resetting when an episode ends.
func BenchmarkStep(b *testing.B) {
	e := newEnv(b, 6, 6, 1)
	e.Reset(0)
	seed := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s := e.Step(Actions[i%4]); s.Done {
			b.StopTimer()
			seed++
			e.Reset(seed)
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkSolve measures the breadth-first solver on generated levels.
func BenchmarkSolve(b *testing.B) {
	for _, shape := range [][3]int{{6, 6, 1}, {8, 8, 2}} {
		b.Run(fmt.Sprintf("%dx%d_%dbox", shape[0], shape[1], shape[2]), func(b *testing.B) {
			e := newEnv(b, shape[0], shape[1], shape[2])
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e.Reset(int64(i % 100))
				b.StartTimer()
				if _, ok := e.Solve(0); !ok {
					b.Fatal("unsolved")
				}
			}
		})
	}
}
