// Package display is how notebook cells and compiled packages (the DSL,
// plots, the trainer) put rich output into the notebook: MIME bundles
// published as Jupyter display_data, optionally under a display id so that a
// later Update replaces them in place (update_display_data), the hook live
// training progress uses.
//
// A value displays itself by implementing one of these interfaces, tried in
// this order (see Render):
//
//	MIMEBundler  MIMEBundle() map[string]any   (+ optional MetadataProvider)
//	PNGer        PNG() ([]byte, error)
//	SVGer        SVG() ([]byte, error)
//	HTMLer       HTML() string
//	Markdowner   Markdown() string
//	image.Image  encoded as PNG
//	error, fmt.Stringer, anything else: text/plain
//
// Bundle values may be string, []byte (binary types are base64-encoded as
// Jupyter wants, text types become strings) or any JSON-encodable value.
// Every bundle gets a text/plain entry, since every frontend can show it.
//
// Nothing here knows about ZeroMQ: the session installs a Publisher for the
// cell it runs (SetPublisher), and the kernel or the headless runner turns
// each Data into a message or a notebook output.
package display
