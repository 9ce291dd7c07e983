package countdown

import (
	"errors"
	"fmt"
	"math/big"
)

// MaxExprLen bounds the length of an answer the evaluator reads, which
// bounds its work (a valid answer is a few dozen characters).
const MaxExprLen = 1000

// maxDepth bounds nested parentheses and unary signs, so a hostile
// "((((…" cannot exhaust the stack.
const maxDepth = 64

// maxDigits bounds one number literal.
const maxDigits = 12

// Eval parses and evaluates an arithmetic expression over non-negative
// integers with + - * / (also × ÷ and the minus sign −), unary signs and
// parentheses, in exact rational arithmetic. It returns the value and the
// number literals in order of appearance. Division by zero, an unknown
// character, a missing operand or parenthesis is an error naming the
// position (in bytes). This is the only way answers are evaluated: there is
// no eval of the answer text.
//
// Grammar (recursive descent, usual precedence, left-associative):
//
//	expr   = term { ("+" | "-") term }
//	term   = factor { ("*" | "/") factor }
//	factor = ("+" | "-") factor | number | "(" expr ")"
func Eval(s string) (*big.Rat, []int64, error) {
	if len(s) > MaxExprLen {
		return nil, nil, fmt.Errorf("expression longer than %d bytes", MaxExprLen)
	}
	p := &exprParser{src: s}
	p.next()
	v, err := p.expr(0)
	if err != nil {
		return nil, nil, err
	}
	if p.err != nil {
		return nil, nil, p.err
	}
	if p.tok != tokEOF {
		return nil, nil, p.errorf("unexpected %s", p.describe())
	}
	return v, p.nums, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokOp // + - * /
	tokLParen
	tokRParen
	tokBad
)

type exprParser struct {
	src  string
	pos  int // byte offset of the next unread byte
	at   int // byte offset of the current token
	tok  tokKind
	op   byte // for tokOp: one of + - * /
	num  int64
	text string // the current token's text
	nums []int64
	err  error // a lexing error (a literal too long)
}

func (p *exprParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.at, fmt.Sprintf(format, args...))
}

func (p *exprParser) describe() string {
	switch p.tok {
	case tokEOF:
		return "end of expression"
	case tokBad:
		return fmt.Sprintf("character %q", p.text)
	}
	return fmt.Sprintf("%q", p.text)
}

// next reads the next token, skipping white space.
func (p *exprParser) next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
	}
	p.at = p.pos
	if p.pos >= len(p.src) {
		p.tok, p.text = tokEOF, ""
		return
	}
	c := p.src[p.pos]
	switch {
	case c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		p.tok, p.text = tokNum, p.src[start:p.pos]
		if len(p.text) > maxDigits {
			p.err = p.errorf("number %s… has more than %d digits", p.text[:maxDigits], maxDigits)
			p.tok = tokBad
			return
		}
		var n int64
		for _, d := range p.text {
			n = n*10 + int64(d-'0')
		}
		p.num = n
		return
	case c == '+' || c == '-' || c == '*' || c == '/':
		p.pos++
		p.tok, p.op, p.text = tokOp, c, string(c)
		return
	case c == '(':
		p.pos++
		p.tok, p.text = tokLParen, "("
		return
	case c == ')':
		p.pos++
		p.tok, p.text = tokRParen, ")"
		return
	}
	for _, alias := range []struct {
		s  string
		op byte
	}{{"×", '*'}, {"÷", '/'}, {"−", '-'}} {
		if len(p.src)-p.pos >= len(alias.s) && p.src[p.pos:p.pos+len(alias.s)] == alias.s {
			p.pos += len(alias.s)
			p.tok, p.op, p.text = tokOp, alias.op, alias.s
			return
		}
	}
	// One byte of an unknown character; the error quotes it.
	r := []rune(p.src[p.pos:min(len(p.src), p.pos+4)])[0]
	p.tok, p.text = tokBad, string(r)
	p.pos++
}

var errDivZero = errors.New("division by zero")

func (p *exprParser) expr(depth int) (*big.Rat, error) {
	v, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && (p.op == '+' || p.op == '-') {
		op := p.op
		p.next()
		w, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		if op == '+' {
			v.Add(v, w)
		} else {
			v.Sub(v, w)
		}
	}
	return v, nil
}

func (p *exprParser) term(depth int) (*big.Rat, error) {
	v, err := p.factor(depth)
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && (p.op == '*' || p.op == '/') {
		op, at := p.op, p.at
		p.next()
		w, err := p.factor(depth)
		if err != nil {
			return nil, err
		}
		if op == '*' {
			v.Mul(v, w)
		} else {
			if w.Sign() == 0 {
				return nil, fmt.Errorf("at byte %d: %w", at, errDivZero)
			}
			v.Quo(v, w)
		}
	}
	return v, nil
}

func (p *exprParser) factor(depth int) (*big.Rat, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested deeper than %d levels", maxDepth)
	}
	switch p.tok {
	case tokOp:
		if p.op != '+' && p.op != '-' {
			return nil, p.errorf("missing number before %q", p.text)
		}
		neg := p.op == '-'
		p.next()
		v, err := p.factor(depth + 1)
		if err != nil {
			return nil, err
		}
		if neg {
			v.Neg(v)
		}
		return v, nil
	case tokNum:
		v := new(big.Rat).SetInt64(p.num)
		p.nums = append(p.nums, p.num)
		p.next()
		return v, nil
	case tokLParen:
		p.next()
		v, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.tok != tokRParen {
			return nil, p.errorf("want ), got %s", p.describe())
		}
		p.next()
		return v, nil
	case tokBad:
		if p.err != nil {
			return nil, p.err
		}
	}
	return nil, p.errorf("want a number or (, got %s", p.describe())
}
