package countdown

import (
	"fmt"
	"math/bits"
	"math/rand"
	"strings"
)

// rat is an exact rational n/d with d > 0 in lowest terms. The solver's
// values come from at most MaxNums numbers of at most MaxNumber each; every
// numerator and denominator is then at most 2^(k−1)·∏aᵢ ≤ 16·1000⁵ < 2⁶³,
// so int64 cannot overflow.
type rat struct{ n, d int64 }

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func mk(n, d int64) rat {
	if d < 0 {
		n, d = -n, -d
	}
	g := gcd(n, d)
	if g == 0 {
		return rat{0, 1}
	}
	return rat{n / g, d / g}
}

func (r rat) String() string {
	if r.d == 1 {
		return fmt.Sprint(r.n)
	}
	return fmt.Sprintf("%d/%d", r.n, r.d)
}

// apply returns a op b, false for a division by zero.
func apply(a rat, op byte, b rat) (rat, bool) {
	switch op {
	case '+':
		return mk(a.n*b.d+b.n*a.d, a.d*b.d), true
	case '-':
		return mk(a.n*b.d-b.n*a.d, a.d*b.d), true
	case '*':
		return mk(a.n*b.n, a.d*b.d), true
	case '/':
		if b.n == 0 {
			return rat{}, false
		}
		return mk(a.n*b.d, a.d*b.n), true
	}
	return rat{}, false
}

// node is a partial expression: its value, its text with the fewest
// parentheses, the precedence of its top operator (1 for + −, 2 for × ÷,
// 3 for a number) and the steps that built it, for the reasoning text.
type node struct {
	v     rat
	text  string
	prec  int
	steps []string
}

// combine builds a op b; ok is false for a division by zero.
func combine(a node, op byte, b node) (node, bool) {
	v, ok := apply(a.v, op, b.v)
	if !ok {
		return node{}, false
	}
	// Parenthesise an operand whose operator binds less tightly, and the
	// right operand of − and ÷ at equal precedence: a − (b + c), a ÷ (b × c).
	prec := 1
	if op == '*' || op == '/' {
		prec = 2
	}
	lt, rt := a.text, b.text
	if a.prec < prec {
		lt = "(" + lt + ")"
	}
	if b.prec < prec || (b.prec == prec && (op == '-' || op == '/')) {
		rt = "(" + rt + ")"
	}
	steps := make([]string, 0, len(a.steps)+len(b.steps)+1)
	steps = append(append(append(steps, a.steps...), b.steps...),
		fmt.Sprintf("%s %c %s = %s", a.v, op, b.v, v))
	return node{v: v, text: lt + " " + string(op) + " " + rt, prec: prec, steps: steps}, true
}

// Solution is an expression reaching a target and the steps of its
// arithmetic, in the order they are done ("8 - 5 = 3").
type Solution struct {
	Expr  string
	Steps []string
}

// Solve searches an expression that uses every number exactly once with the
// operators in ops (a subset of "+-*/") and equals target. It tries every
// pair of the remaining values and every operator in both orders,
// depth-first, on bare values; the text of the expression and its steps are
// built afterwards by replaying the winning choices. rng, when not nil,
// shuffles the order so different calls find different solutions. ok is
// false when none exists.
func Solve(nums []int, target int, ops string, rng *rand.Rand) (Solution, bool) {
	if len(nums) == 0 {
		return Solution{}, false
	}
	want := rat{int64(target), 1}
	// path holds the choices taken so far; each result goes after the
	// remaining items, in their order.
	var path []candidate
	natural := true // first pass: only whole, non-negative intermediate values
	var search func(vals []rat) bool
	search = func(vals []rat) bool {
		if len(vals) == 1 {
			return vals[0] == want
		}
		rest := make([]rat, 0, len(vals)-1)
		for _, pair := range pairs(len(vals), rng) {
			rest = rest[:0]
			for k, v := range vals {
				if k != pair[0] && k != pair[1] {
					rest = append(rest, v)
				}
			}
			for _, c := range candidates(pair[0], pair[1], ops, rng) {
				v, ok := apply(vals[c.i], c.op, vals[c.j])
				if !ok || (natural && (v.n < 0 || v.d != 1)) {
					continue
				}
				path = append(path, c)
				if search(append(rest, v)) {
					return true
				}
				path = path[:len(path)-1]
			}
		}
		return false
	}
	start := make([]rat, len(nums))
	for i, n := range nums {
		start[i] = rat{int64(n), 1}
	}
	// Solutions over whole, non-negative numbers read best ("98 - 73 = 25",
	// not "8 - -25"); a second pass allows fractions and negative values,
	// which a few instances need (1 3 4 6 → 24 is only 6 / (1 − 3/4)).
	if !search(start) {
		natural = false
		if path = path[:0]; !search(start) {
			return Solution{}, false
		}
	}
	items := make([]node, len(nums))
	for i, n := range nums {
		items[i] = node{v: rat{int64(n), 1}, text: fmt.Sprint(n), prec: 3}
	}
	for _, c := range path {
		n, _ := combine(items[c.i], c.op, items[c.j])
		rest := make([]node, 0, len(items)-1)
		for k, it := range items {
			if k != c.i && k != c.j {
				rest = append(rest, it)
			}
		}
		items = append(rest, n)
	}
	return Solution{Expr: items[0].text, Steps: items[0].steps}, true
}

// A candidate combines items i and j, in that order, with op.
type candidate struct {
	i, j int
	op   byte
}

// candidates lists the ways to combine items a and b: each operator, both
// orders for − and ÷ (b − a is tried as such, so a negative intermediate is
// never needed); shuffled when rng is set.
func candidates(a, b int, ops string, rng *rand.Rand) []candidate {
	out := make([]candidate, 0, 2*len(ops))
	for k := 0; k < len(ops); k++ {
		out = append(out, candidate{a, b, ops[k]})
		if ops[k] == '-' || ops[k] == '/' {
			out = append(out, candidate{b, a, ops[k]})
		}
	}
	if rng != nil {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// pairs lists the index pairs i < j of n items, shuffled when rng is set.
func pairs(n int, rng *rand.Rand) [][2]int {
	var out [][2]int
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			out = append(out, [2]int{i, j})
		}
	}
	if rng != nil {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// Reachable returns, sorted, the integers in [1, max] that an expression
// using every number exactly once with ops can equal. It builds the set of
// values of every subset of the numbers from the sets of its two-part
// splits (each split once: the part holding the lowest index on the left),
// so shared sub-results are computed once.
func Reachable(nums []int, ops string, max int) []int {
	n := len(nums)
	if n == 0 {
		return nil
	}
	full := 1<<n - 1
	hit := make([]bool, max+1) // the full set's values are only counted
	keep := func(c rat) {
		if c.d == 1 && c.n >= 1 && c.n <= int64(max) {
			hit[c.n] = true
		}
	}
	sets := make([]map[rat]bool, full+1)
	for mask := 1; mask <= full; mask++ {
		if mask&(mask-1) == 0 { // one number
			v := rat{int64(nums[bits.TrailingZeros(uint(mask))]), 1}
			sets[mask] = map[rat]bool{v: true}
			if mask == full {
				keep(v)
			}
			continue
		}
		set := map[rat]bool{}
		add := func(c rat) { set[c] = true }
		if mask == full {
			add = keep
		}
		low := mask & -mask
		// Enumerate the sub-masks that hold the lowest bit, except mask.
		for left := (mask - 1) & mask; left > 0; left = (left - 1) & mask {
			if left&low == 0 {
				continue
			}
			right := mask ^ left
			for a := range sets[left] {
				for b := range sets[right] {
					for o := 0; o < len(ops); o++ {
						if c, ok := apply(a, ops[o], b); ok {
							add(c)
						}
						if ops[o] == '-' || ops[o] == '/' {
							if c, ok := apply(b, ops[o], a); ok {
								add(c)
							}
						}
					}
				}
			}
		}
		sets[mask] = set
	}
	out := []int{}
	for v := 1; v <= max; v++ {
		if hit[v] {
			out = append(out, v)
		}
	}
	return out
}

// validOps reports whether ops is a non-empty set of + - * /.
func validOps(ops string) bool {
	if ops == "" {
		return false
	}
	for i := 0; i < len(ops); i++ {
		if !strings.ContainsRune("+-*/", rune(ops[i])) || strings.Count(ops, ops[i:i+1]) > 1 {
			return false
		}
	}
	return true
}
