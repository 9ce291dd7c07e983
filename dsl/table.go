package dsl

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"
)

// Table is a small table that displays itself: aligned text, or HTML in a
// notebook.
type Table struct {
	Title   string
	Columns []string
	Rows    [][]string
}

// String is the table as aligned text, numbers right-aligned.
func (t *Table) String() string {
	width := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		width[i] = utf8.RuneCountInString(c)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	line := func(cells []string) {
		var parts []string
		for i, c := range cells {
			if i >= len(width) {
				break
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				parts = append(parts, c+pad)
			} else {
				parts = append(parts, pad+c)
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(parts, "  "), " ") + "\n")
	}
	line(t.Columns)
	for _, r := range t.Rows {
		line(r)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// HTML is the table as an HTML <table>.
func (t *Table) HTML() string {
	var b strings.Builder
	b.WriteString("<table>")
	if t.Title != "" {
		fmt.Fprintf(&b, "<caption>%s</caption>", html.EscapeString(t.Title))
	}
	b.WriteString("<thead><tr>")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c))
	}
	b.WriteString("</tr></thead><tbody>")
	for _, r := range t.Rows {
		b.WriteString("<tr>")
		for i, c := range r {
			align := ` style="text-align:right"`
			if i == 0 {
				align = ` style="text-align:left"`
			}
			fmt.Fprintf(&b, "<td%s>%s</td>", align, html.EscapeString(c))
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table>")
	return b.String()
}

// MIMEBundle shows the table as HTML, with the text form for terminals.
func (t *Table) MIMEBundle() map[string]any {
	return map[string]any{"text/plain": t.String(), "text/html": t.HTML()}
}
