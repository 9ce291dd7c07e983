package envtest

import (
	"testing"

	"github.com/ragen-go/ragen/envs"
)

func TestFirstDiff(t *testing.T) {
	for _, c := range []struct{ want, got, diff string }{
		{"a\nb\nc", "a\nx\nc", "line 2:\nwant: \"b\"\ngot:  \"x\""},
		{"a\nb", "a\nb\nc", "line 3:\nwant: \"\"\ngot:  \"c\""},
		{"a\r\n", "a\n", "line 1:\nwant: \"a\\r\"\ngot:  \"a\""},
	} {
		if d := firstDiff(c.want, c.got); d != c.diff {
			t.Errorf("firstDiff(%q, %q) = %q, want %q", c.want, c.got, d, c.diff)
		}
	}
}

func TestScripted(t *testing.T) {
	p := Scripted("a", "b")
	var ep envs.Episode
	if got := p(&ep) + p(&ep) + p(&ep); got != "ab" {
		t.Errorf("scripted answers %q, want \"ab\" then \"\"", got)
	}
}
