package main

import (
	"fmt"
	"os"
	"reflect"
	"testing/fstest"
	"time"
	"context"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

type Fig struct{}

func (Fig) MIMEBundle() map[string]any { return map[string]any{"text/plain": "fig"} }
func (Fig) String() string             { return "figstr" }
func Publish(data map[string]any)      { fmt.Println("PUBLISH", data) }
func NewFig() Fig                      { return Fig{} }

var src = `package display

import "github.com/ragen-go/ragen/kernel/display"

type bundler interface{ MIMEBundle() map[string]any }
type stringer interface{ String() string }

func Display(v any) {
	if x, ok := v.(bundler); ok {
		display.Publish(x.MIMEBundle())
		return
	}
	if x, ok := v.(stringer); ok {
		display.Publish(map[string]any{"text/plain": x.String()})
		return
	}
	display.Publish(map[string]any{"text/plain": "plain"})
}
`

func main() {
	fsys := fstest.MapFS{"src/ragen/display/display.go": &fstest.MapFile{Data: []byte(src)}}
	i := interp.New(interp.Options{Stdout: os.Stdout, Stderr: os.Stderr, GoPath: ".", SourcecodeFilesystem: fsys})
	i.Use(stdlib.Symbols)
	i.Use(interp.Exports{"github.com/ragen-go/ragen/kernel/display/display": {
		"Publish": reflect.ValueOf(Publish), "NewFig": reflect.ValueOf(NewFig),
	}})
	for _, c := range []string{`import kd "github.com/ragen-go/ragen/kernel/display"`,
		`type T struct{A int}`, `func (t T) MIMEBundle() map[string]any { return map[string]any{"text/plain": t.A} }`,
		`type S struct{}`, `func (S) String() string { return "I am S" }`,
		`type P struct{}`, `func (*P) String() string { return "I am *P" }`,
		`func __r(v any) {
	if x, ok := v.(interface{ MIMEBundle() map[string]any }); ok {
		kd.Publish(x.MIMEBundle())
		return
	}
	if x, ok := v.(interface{ String() string }); ok {
		kd.Publish(map[string]any{"text/plain": x.String()})
		return
	}
	kd.Publish(map[string]any{"text/plain": "plain"})
}`,
		`__r(T{4})`, `__r(S{})`, `__r(kd.NewFig())`, `__r(3)`, `__r(&T{5})`, `__r(&P{})`, `__r(P{})`, `var e error = fmt.Errorf("x"); __r(e)`, 
	} {
		v, err := i.Eval(c)
		fmt.Println("->", v, err)
	}
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	v, err := i.EvalWithContext(ctx, "time.Sleep(2*time.Second); println(\"after sleep\")")
	fmt.Println("sleep:", v, err, time.Since(t0))
	_, err = i.Eval(`import "time"`)
	v, err = i.EvalWithContext(ctx, "time.Sleep(2*time.Second); println(\"after sleep\")")
	fmt.Println("sleep:", v, err, time.Since(t0))
	time.Sleep(2 * time.Second)
	v, err = i.Eval(`func g() int { return 7 }; g()`)
	fmt.Println(v, err)
}
