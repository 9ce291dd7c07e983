package session

import (
	"fmt"
	"go/ast"
	"go/token"
	"math"
	"reflect"
	"strings"

	"github.com/ragen-go/ragen/internal/rewrite"
)

// Out of memory. A Go program that asks for more memory than the machine
// can give gets no error: the runtime stops with "fatal error: out of
// memory", which no recover catches, and the kernel dies with its state
// before it can reply (Jupyter only sees the process end). A limit set with
// debug.SetMemoryLimit does not prevent that: it is a target for the
// garbage collector, not a cap on allocation. The request a cell makes by
// mistake in one go is a huge make (a size off by a factor), so every make
// in a cell is rewritten to check its size first:
//
//	make([]T, n)   becomes   make([]T, __ragen.MakeSize(([]T)(nil), n))
//
// MakeSize panics (a panic the cell may recover, otherwise the cell's
// error) when n elements need more memory than is available right now
// (memAvailable: on Linux MemAvailable, bounded by the cgroup's limit).
// Not covered, and not hidden: memory that grows step by step (append in a
// loop), composite literals, and allocations inside compiled packages. The
// OS ends the kernel then, Jupyter says the kernel died, and the runtime's
// report goes to the kernel's log (keepCrashOutput). A size passed as a
// non-integer variable, which Go rejects at compile time, is rejected when
// the make runs.
//
// /*line*/ comments around each inserted call keep the positions of the
// cell's own tokens, so errors still point at what the user wrote.

// makeCheckFrom is the size below which MakeSize does not ask the system:
// smaller makes stay cheap.
const makeCheckFrom = 64 << 20

// memAvailable is the memory a new allocation can get now, in bytes, and
// whether it is known; a variable for tests.
var memAvailable = systemMemAvailable

// guardMake rewrites the make calls of src, a complete file as compiled,
// parsed into f in fset (f nil: not parsed yet).
func guardMake(fset *token.FileSet, f *ast.File, src string) string {
	if !strings.Contains(src, "make") {
		return src
	}
	if f == nil {
		fset = token.NewFileSet()
		var err error
		if f, err = parseFile(fset, fileName, src, 0); err != nil {
			return src // the real parse reports the error
		}
	}
	var edits []rewrite.Edit
	off := func(p token.Pos) int { return fset.PositionFor(p, false).Offset }
	text := func(n ast.Node) string { return src[off(n.Pos()):off(n.End())] }
	at := func(p token.Pos) string { return rewrite.PositionComment(fset, p) }
	var visit func(n ast.Node, tparams map[string]bool)
	visit = func(root ast.Node, tparams map[string]bool) {
		ast.Inspect(root, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && n != root {
				visit(fd, typeParams(fd))
				return false
			}
			c, ok := n.(*ast.CallExpr)
			if !ok || len(c.Args) < 2 || c.Ellipsis.IsValid() {
				return true
			}
			if id, ok := c.Fun.(*ast.Ident); !ok || id.Name != "make" {
				return true
			}
			if id, ok := c.Args[0].(*ast.Ident); ok && tparams[id.Name] {
				return true // (T)(nil) of a type parameter: leave it to the runtime
			}
			typ := text(c.Args[0])
			for _, a := range c.Args[1:] {
				edits = append(edits,
					rewrite.Insert(off(a.Pos()), "__ragen.MakeSize(("+typ+")(nil), "+at(a.Pos())),
					rewrite.Insert(off(a.End()), ")"+at(a.End())))
			}
			return true
		})
	}
	for _, d := range f.Decls {
		tp := map[string]bool{}
		if fd, ok := d.(*ast.FuncDecl); ok {
			tp = typeParams(fd)
		}
		visit(d, tp)
	}
	return rewrite.Apply(src, edits)
}

// typeParams are the names of a function's type parameters, and of its
// receiver's (func (l *List[T]) M()).
func typeParams(fd *ast.FuncDecl) map[string]bool {
	tp := map[string]bool{}
	if fd.Type.TypeParams != nil {
		for _, f := range fd.Type.TypeParams.List {
			for _, n := range f.Names {
				tp[n.Name] = true
			}
		}
	}
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		t := fd.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		switch x := t.(type) {
		case *ast.IndexExpr:
			if id, ok := x.Index.(*ast.Ident); ok {
				tp[id.Name] = true
			}
		case *ast.IndexListExpr:
			for _, e := range x.Indices {
				if id, ok := e.(*ast.Ident); ok {
					tp[id.Name] = true
				}
			}
		}
	}
	return tp
}

// MemoryError is the panic of a make that asks for more memory than is
// available.
type MemoryError struct {
	Type      string // the made type, as reflect writes it
	N         uint64 // the size asked for
	Need      uint64 // bytes, at least
	Available uint64 // bytes
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("out of memory: make(%s, %d) needs %s, more than the %s available; the kernel refused it rather than die",
		e.Type, e.N, bytesText(e.Need), bytesText(e.Available))
}

// makeSize is MakeSize: it returns n as an int, after checking that n
// elements of typ (a nil slice, map or channel) fit in the available
// memory. Negative and out-of-range sizes are left to make's own panic.
func makeSize(typ any, n any) int {
	v := reflect.ValueOf(n)
	var size uint64
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() < 0 {
			return int(v.Int())
		}
		size = uint64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		size = v.Uint()
		if size > math.MaxInt {
			panic(fmt.Sprintf("make: size %d out of range", size))
		}
	case reflect.Float32, reflect.Float64: // an untyped constant such as 1e6
		f := v.Float()
		if f != math.Trunc(f) || f < math.MinInt64 || f > math.MaxInt64 {
			panic(fmt.Sprintf("make: size %v is not an integer", f))
		}
		if f < 0 {
			return int(f)
		}
		size = uint64(f)
	default:
		panic(fmt.Sprintf("make: size of type %T is not an integer", n))
	}
	t := reflect.TypeOf(typ)
	if t == nil {
		return int(size)
	}
	var elem uint64
	switch t.Kind() {
	case reflect.Slice, reflect.Chan:
		elem = uint64(t.Elem().Size())
	case reflect.Map:
		elem = uint64(t.Key().Size() + t.Elem().Size())
	}
	if elem == 0 {
		return int(size)
	}
	need := size * elem
	if size != 0 && need/size != elem {
		need = math.MaxUint64
	}
	if need < makeCheckFrom {
		return int(size)
	}
	if avail, ok := memAvailable(); ok && need > avail {
		panic(&MemoryError{Type: t.String(), N: size, Need: need, Available: avail})
	}
	return int(size)
}

// bytesText writes a size in bytes with a binary unit.
func bytesText(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit && exp < 5; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}
