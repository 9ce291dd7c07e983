package notebook

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// A Mismatch is a code cell whose fresh outputs differ from the stored
// ones.
type Mismatch struct {
	Index int    // position in the executed notebook's cells
	ID    string // the cell id
	Diff  string // unified-style diff: "-" stored, "+" fresh
}

// Check compares the outputs of the executed notebook with those stored
// in the original, cell by cell (cells matched by id; a cell absent from
// the original is not compared), the way nbval does: stream text and text
// bundles exactly, except that numbers embedded in text compare within
// the relative tolerance rtol (metric tables); images by presence;
// errors by name and message, not traceback; metadata, timing and
// execution counts not at all. A cell tagged nocheck or containing the
// comment "// ragen:nocheck" is skipped.
func Check(stored, executed *Notebook, rtol float64) []Mismatch {
	old := map[string]*Cell{}
	for _, c := range stored.Cells {
		old[c.ID] = c
	}
	var out []Mismatch
	for i, c := range executed.Cells {
		o, ok := old[c.ID]
		if c.Type != "code" || !ok || o.Type != "code" || c.HasTag(TagNoCheck) || strings.Contains(c.Source, NoCheckComment) {
			continue
		}
		a, b := outputLines(o.Outputs), outputLines(c.Outputs)
		if d := diffLines(a, b, rtol); d != "" {
			out = append(out, Mismatch{Index: i, ID: c.ID, Diff: d})
		}
	}
	return out
}

// outputLines is the comparable text of a cell's outputs, one line per
// text line, with a header line per output.
func outputLines(outs []*Output) []string {
	var ls []string
	text := func(s string) {
		ls = append(ls, strings.Split(strings.TrimSuffix(s, "\n"), "\n")...)
	}
	for _, o := range outs {
		switch o.Type {
		case "stream":
			ls = append(ls, "["+o.Name+"]")
			text(o.Text)
		case "error":
			ls = append(ls, "[error] "+o.EName+": "+o.EValue)
		default:
			ls = append(ls, "["+strings.TrimSuffix(o.Type, "_data")+"]")
			for _, mime := range mimeTypes(o.Data) {
				v := o.Data[mime]
				s, isString := v.(string)
				switch {
				case mime == "text/plain":
					text(s)
				case isString && splitMIME(mime) && mime != "image/svg+xml":
					ls = append(ls, mime+":")
					text(s)
				case strings.HasSuffix(mime, "json"):
					b, _ := json.Marshal(v)
					ls = append(ls, mime+": "+string(b))
				default: // images and other binary data: presence only
					ls = append(ls, "<"+mime+">")
				}
			}
		}
	}
	return ls
}

var numberRE = regexp.MustCompile(`[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// sameLine reports whether two lines are equal except for numbers that
// differ by at most rtol relative to the larger.
func sameLine(a, b string, rtol float64) bool {
	if a == b {
		return true
	}
	if rtol <= 0 {
		return false
	}
	na, nb := numberRE.FindAllStringIndex(a, -1), numberRE.FindAllStringIndex(b, -1)
	if len(na) != len(nb) || numberRE.ReplaceAllString(a, "#") != numberRE.ReplaceAllString(b, "#") {
		return false
	}
	for i := range na {
		x, errx := strconv.ParseFloat(a[na[i][0]:na[i][1]], 64)
		y, erry := strconv.ParseFloat(b[nb[i][0]:nb[i][1]], 64)
		if errx != nil || erry != nil {
			return false
		}
		if math.Abs(x-y) > rtol*math.Max(math.Abs(x), math.Abs(y)) {
			return false
		}
	}
	return true
}

// diffLines returns a unified-style diff of a (stored) and b (fresh) with
// two lines of context, or "" when they match. It aligns lines by a
// longest common subsequence under sameLine.
func diffLines(a, b []string, rtol float64) string {
	n, m := len(a), len(b)
	// lcs[i][j]: length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if sameLine(a[i], b[j], rtol) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && sameLine(a[i], b[j], rtol):
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]): // deletions first on ties
			ops = append(ops, op{'+', b[j]})
			j++
		default:
			ops = append(ops, op{'-', a[i]})
			i++
		}
	}
	const context = 2
	changed := false
	keep := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind == ' ' {
			continue
		}
		changed = true
		for d := max(0, k-context); d <= min(len(ops)-1, k+context); d++ {
			keep[d] = true
		}
	}
	if !changed {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("--- stored\n+++ executed\n")
	for k, o := range ops {
		if !keep[k] {
			continue
		}
		if k > 0 && !keep[k-1] {
			sb.WriteString("@@\n") // lines left out before this hunk
		}
		fmt.Fprintf(&sb, "%c %s\n", o.kind, o.text)
	}
	return sb.String()
}
