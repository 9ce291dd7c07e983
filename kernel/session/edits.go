package session

import (
	"fmt"
	"go/token"
	"sort"
)

// edit replaces src[start:end] by text; start == end inserts. The guards
// rewrite a chunk's source by a list of edits found on its parsed tree.
type edit struct {
	start, end int
	text       string
}

// insert is an edit that inserts text at offset at.
func insert(at int, text string) edit { return edit{at, at, text} }

// applyEdits applies non-overlapping edits to src. They are applied from
// the end, so earlier offsets stay valid; of two insertions at one offset
// the one listed first ends up last (the closing text of an inner rewrite
// goes after the opening of an outer one).
func applyEdits(src string, edits []edit) string {
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	for _, e := range edits {
		src = src[:e.start] + e.text + src[e.end:]
	}
	return src
}

// positionComment is a /*line*/ comment that keeps the position of the text
// after it at p's, so errors in rewritten code name the cell's line and
// column.
func positionComment(fset *token.FileSet, p token.Pos) string {
	pos := fset.Position(p)
	return fmt.Sprintf("/*line %s:%d:%d*/", pos.Filename, pos.Line, pos.Column)
}
