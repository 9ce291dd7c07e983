package session

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sync/atomic"
)

// parses counts the go/parser calls of every session, for the test that
// keeps a cell at one parse per chunk.
var parses atomic.Int64

// parseFile is parser.ParseFile, counted.
func parseFile(fset *token.FileSet, name, src string, mode parser.Mode) (*ast.File, error) {
	parses.Add(1)
	return parser.ParseFile(fset, name, src, mode)
}
