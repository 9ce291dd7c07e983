package session

import (
	"context"
	"testing"
)

func BenchmarkNew(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, err := New(Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkExecute is a trivial statement cell and a trivial expression
// cell (which goes through the result probes).
func BenchmarkExecute(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Execute(context.Background(), Cell{Code: "x := 1", Number: 1}, Output{})
	for _, code := range []string{"v := 1", "x"} {
		b.Run(code, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if r := s.Execute(context.Background(), Cell{Code: code, Number: 2}, Output{}); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}
