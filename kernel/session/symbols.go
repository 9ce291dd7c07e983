package session

import "reflect"

//go:generate go run github.com/traefik/yaegi/cmd/yaegi extract -name session -exclude ^SetPublisher$,^Publisher$,^Normalize$,^Data$,^PublishData$ github.com/ragen-go/ragen/kernel/display
//go:generate go run github.com/traefik/yaegi/cmd/yaegi extract -name session -exclude ^Set$,^Observed$ github.com/ragen-go/ragen/kernel/cellctx

// Symbols holds the symbol tables generated from the kernel's own compiled
// packages (kernel/display). Every session Uses them, and also registers the
// display package under the short import path "ragen/display".
var Symbols = map[string]map[string]reflect.Value{}
