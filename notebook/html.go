package notebook

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"go/scanner"
	"go/token"
	"html"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// markdown renders CommonMark with GitHub's tables, strikethrough and task
// lists. Raw HTML in markdown is left out (goldmark's safe default), so a
// shared report runs no script from a notebook.
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// HTML renders an executed notebook as one self-contained page to share
// without Jupyter: markdown rendered, code highlighted, images embedded as
// data URIs, errors styled; no external resources.
func HTML(nb *Notebook, title string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", html.EscapeString(title), pageCSS)
	for _, c := range nb.Cells {
		switch c.Type {
		case "markdown":
			b.WriteString(`<section class="cell markdown">`)
			if err := markdown.Convert([]byte(c.Source), &b); err != nil {
				return nil, fmt.Errorf("cell %s: %w", c.ID, err)
			}
			b.WriteString("</section>\n")
		case "raw":
			fmt.Fprintf(&b, "<section class=\"cell raw\"><pre>%s</pre></section>\n", html.EscapeString(c.Source))
		case "code":
			prompt := " "
			if c.ExecutionCount != nil {
				prompt = fmt.Sprint(*c.ExecutionCount)
			}
			fmt.Fprintf(&b, "<section class=\"cell code\" id=\"%s\">\n<div class=\"input\"><span class=\"prompt\">In [%s]:</span><pre class=\"source\">%s</pre></div>\n",
				html.EscapeString(c.ID), prompt, highlightGo(c.Source))
			for _, o := range c.Outputs {
				writeOutput(&b, o)
			}
			b.WriteString("</section>\n")
		}
	}
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.Bytes(), nil
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

func writeOutput(b *bytes.Buffer, o *Output) {
	switch o.Type {
	case "stream":
		fmt.Fprintf(b, "<pre class=\"output stream %s\">%s</pre>\n", o.Name, html.EscapeString(ansiRE.ReplaceAllString(o.Text, "")))
		return
	case "error":
		text := strings.Join(append([]string{o.EName + ": " + o.EValue}, o.Traceback...), "\n")
		fmt.Fprintf(b, "<pre class=\"output error\">%s</pre>\n", html.EscapeString(ansiRE.ReplaceAllString(text, "")))
		return
	}
	prompt := ""
	if o.Type == "execute_result" && o.ExecutionCount != nil {
		prompt = fmt.Sprintf("<span class=\"prompt\">Out[%d]:</span>", *o.ExecutionCount)
	}
	fmt.Fprintf(b, "<div class=\"output %s\">%s", strings.ReplaceAll(o.Type, "_", "-"), prompt)
	str := func(mime string) (string, bool) {
		s, ok := o.Data[mime].(string)
		return s, ok
	}
	// The richest form the page can show, as a frontend picks it.
	if s, ok := str("image/png"); ok {
		fmt.Fprintf(b, `<img alt="%s" src="data:image/png;base64,%s">`, html.EscapeString(plain(o)), strings.ReplaceAll(s, "\n", ""))
	} else if s, ok := str("image/jpeg"); ok {
		fmt.Fprintf(b, `<img alt="%s" src="data:image/jpeg;base64,%s">`, html.EscapeString(plain(o)), strings.ReplaceAll(s, "\n", ""))
	} else if s, ok := str("image/svg+xml"); ok {
		fmt.Fprintf(b, `<img alt="%s" src="data:image/svg+xml;base64,%s">`, html.EscapeString(plain(o)), base64.StdEncoding.EncodeToString([]byte(s)))
	} else if s, ok := str("text/html"); ok {
		b.WriteString(s) // the cell's own output, shown as Jupyter shows it
	} else if s, ok := str("text/markdown"); ok {
		if markdown.Convert([]byte(s), b) != nil {
			fmt.Fprintf(b, "<pre>%s</pre>", html.EscapeString(s))
		}
	} else {
		fmt.Fprintf(b, "<pre>%s</pre>", html.EscapeString(plain(o)))
	}
	b.WriteString("</div>\n")
}

func plain(o *Output) string { s, _ := o.Data["text/plain"].(string); return s }

// highlightGo returns src as escaped HTML with Go keywords, strings,
// comments and numbers in spans (classes k, s, c, n). Text that does not
// scan as Go is shown as it is.
func highlightGo(src string) string {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var sc scanner.Scanner
	sc.Init(file, []byte(src), func(token.Position, string) {}, scanner.ScanComments)
	var b strings.Builder
	last := 0
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		class := ""
		switch {
		case tok.IsKeyword():
			class = "k"
		case tok == token.STRING || tok == token.CHAR:
			class = "s"
		case tok == token.COMMENT:
			class = "c"
		case tok == token.INT || tok == token.FLOAT || tok == token.IMAG:
			class = "n"
		}
		if class == "" {
			continue
		}
		off := file.Offset(pos)
		text := lit
		if tok.IsKeyword() {
			text = tok.String()
		}
		if off < last || off+len(text) > len(src) || src[off:off+len(text)] != text {
			continue // a token the scanner rewrote (a comment's \r); leave it plain
		}
		b.WriteString(html.EscapeString(src[last:off]))
		fmt.Fprintf(&b, `<span class="%s">%s</span>`, class, html.EscapeString(text))
		last = off + len(text)
	}
	b.WriteString(html.EscapeString(src[last:]))
	return b.String()
}

const pageCSS = `
body{margin:0;background:#fafafa;color:#1f2328;font:15px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
main{max-width:980px;margin:0 auto;padding:24px}
.cell{margin:12px 0}
.markdown table{border-collapse:collapse}.markdown td,.markdown th{border:1px solid #d0d7de;padding:4px 10px}
.markdown code{background:#eff1f3;padding:1px 4px;border-radius:4px}
.prompt{display:block;color:#6e7781;font:12px monospace;margin-bottom:2px}
pre{margin:0;white-space:pre-wrap;word-break:break-word;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.source{background:#f3f4f6;border:1px solid #d0d7de;border-radius:6px;padding:10px}
.output{padding:6px 10px}
.output img{max-width:100%}
.stream.stderr{background:#fff8e6}
.error{background:#ffebe9;border-left:4px solid #cf222e;color:#82071e}
.k{color:#cf222e;font-weight:600}.s{color:#0a3069}.c{color:#6e7781;font-style:italic}.n{color:#0550ae}
`
