package session

import (
	"context"
	"strings"
	"testing"
)

// A reward expression that does not compile is reported at its column in
// the cell, under the string literal that holds it.
func TestExprErrorPointsIntoCell(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code := "import \"ragen\"\n\nr := ragen.Reward(`success ? 1 : turns_typo`)\n_ = r"
	res := s.Execute(context.Background(), Cell{Code: code, Number: 3}, Output{})
	if res.Err == nil {
		t.Fatal("want an error")
	}
	tb := strings.Join(res.Err.Traceback, "\n")
	want := "cell[3]:3:34: "
	if !strings.Contains(tb, want) {
		t.Fatalf("traceback does not point at the cell column %q:\n%s", want, tb)
	}
	if !strings.Contains(tb, "    3 | r := ragen.Reward(`success ? 1 : turns_typo`)\n      |                                  ^") {
		t.Fatalf("no caret under turns_typo:\n%s", tb)
	}
}
