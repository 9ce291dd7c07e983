package train

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/dist"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
)

// Data parallelism (decision 41). With Config.Comm set, every rank holds
// the same models and optimizer state and takes the same steps:
//
//   - rollouts: rank r plays the groups g with g % size == r (each
//     trajectory with its global seeds), and every rank gathers every
//     trajectory, in task order, so that rewards, the filter, the
//     advantages and the metrics are the single process's;
//   - the forward passes over the batch (the filter's entropies, old and
//     reference log-probs, values): chunks of the batch are dealt
//     round-robin and gathered;
//   - update: each minibatch is cut into units — its micro-batches with
//     MicroBatchTokens, else single trajectories — dealt round-robin; a
//     rank computes the log-probs (values) of its units and gathers the
//     others', so every rank computes the same loss; then the gradient of
//     each of its units, alone, summed exactly (dist.Fixed) and
//     all-reduced: the units depend on the minibatch only, so the sum is
//     the same bits whatever the number of ranks, and every rank takes the
//     same AdamW step;
//   - rank 0 alone writes the run directory.
//
// Per-unit gradients are not the packed minibatch's bits, so a run
// with a Comm (even dist.Single) differs from the default run in the last
// bits of its sums; runs with a Comm agree bit for bit across world sizes.

// comm is the run's communicator: Config.Comm, or a single process.
func (t *Trainer) comm() dist.Comm {
	if t.cfg.Comm != nil {
		return t.cfg.Comm
	}
	return dist.Single{}
}

// writer reports whether this process writes the run directory, samples
// and checkpoints: rank 0.
func (t *Trainer) writer() bool { return t.comm().Rank() == 0 }

// playShared plays the tasks owner(i) assigns to this rank and gathers
// every rank's trajectories into task order. Without a Comm it is play.
func (t *Trainer) playShared(ctx context.Context, tasks []rollout.Task, temp float32, owner func(i int) int) ([]*rollout.Trajectory, error) {
	if t.cfg.Comm == nil {
		return t.play(ctx, tasks, temp)
	}
	c := t.cfg.Comm
	var mine []rollout.Task
	var idx []int
	for i, task := range tasks {
		if owner(i)%c.Size() == c.Rank() {
			mine = append(mine, task)
			idx = append(idx, i)
		}
	}
	var played []*rollout.Trajectory
	var err error
	if len(mine) > 0 {
		if played, err = t.play(ctx, mine, temp); err != nil {
			return nil, err
		}
	}
	// A rank that failed still joins the gather, so the others do not
	// wait forever; its empty share makes them fail too.
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(sharedTrajs{Index: idx, Trajs: played}); err != nil {
		return nil, fmt.Errorf("rollout: encode trajectories: %w", err)
	}
	all, err := c.AllGather(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("rollout: gather trajectories: %w", err)
	}
	out := make([]*rollout.Trajectory, len(tasks))
	for r, b := range all {
		var s sharedTrajs
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
			return nil, fmt.Errorf("rollout: trajectories of rank %d: %w", r, err)
		}
		for k, i := range s.Index {
			out[i] = s.Trajs[k]
		}
	}
	for i, tr := range out {
		if tr == nil {
			return nil, fmt.Errorf("rollout: no rank played task %d", i)
		}
	}
	return out, nil
}

type sharedTrajs struct {
	Index []int
	Trajs []*rollout.Trajectory
}

// units splits a minibatch into the parts whose gradients are summed
// exactly: its micro-batches when MicroBatchTokens is set, else one
// trajectory each. They depend on the minibatch alone, never on the number
// of ranks, which is what makes the sum the same bits on any world size.
func (t *Trainer) units(trajs []*rollout.Trajectory) [][2]int {
	if t.cfg.MicroBatchTokens > 0 {
		return microBatches(trajs, t.cfg.MicroBatchTokens)
	}
	out := make([][2]int, len(trajs))
	for k := range out {
		out[k] = [2]int{k, k + 1}
	}
	return out
}

// own returns the units (indices into units) this rank computes:
// round-robin.
func (t *Trainer) own(units int) []int {
	c := t.comm()
	var out []int
	for u := c.Rank(); u < units; u += c.Size() {
		out = append(out, u)
	}
	return out
}

// gatherRows fills, on every rank, the rows the other ranks computed: rank
// r has filled rows[k] (of each set) for the trajectories k of its own
// units (see own).
func (t *Trainer) gatherRows(units [][2]int, sets ...[][]float64) error {
	c := t.comm()
	var buf []byte
	for _, u := range t.own(len(units)) {
		for k := units[u][0]; k < units[u][1]; k++ {
			for _, rows := range sets {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(len(rows[k])))
				for _, v := range rows[k] {
					buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
				}
			}
		}
	}
	all, err := c.AllGather(buf)
	if err != nil {
		return err
	}
	for r, b := range all {
		for u := r; u < len(units); u += c.Size() {
			for k := units[u][0]; k < units[u][1]; k++ {
				for _, rows := range sets {
					if len(b) < 4 {
						return fmt.Errorf("rows of rank %d: short message", r)
					}
					m := int(binary.LittleEndian.Uint32(b))
					b = b[4:]
					if len(b) < 8*m {
						return fmt.Errorf("rows of rank %d: short message", r)
					}
					row := make([]float64, m)
					for j := range row {
						row[j] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*j:]))
					}
					b = b[8*m:]
					rows[k] = row
				}
			}
		}
	}
	return nil
}

// sumGrads runs backward(u) for each of this rank's units u, each from
// zero gradients, adds each gradient exactly into sum, all-reduces it and
// leaves the total in m's gradients. forward(u) must run unit u's forward
// pass; the last one run before is unit last (its activations are reused).
func (t *Trainer) sumGrads(m *model.Model, sum **dist.Fixed, units, last int, forward, backward func(u int) error) error {
	if *sum == nil {
		*sum = dist.NewFixed(m.Layout.Size)
	}
	f := *sum
	f.Reset()
	own := t.own(units)
	for j := len(own) - 1; j >= 0; j-- {
		u := own[j]
		if u != last {
			if err := forward(u); err != nil {
				return err
			}
		}
		last = -1
		m.ZeroGrad()
		if err := backward(u); err != nil {
			return err
		}
		if err := m.SyncGrads(); err != nil {
			return err
		}
		f.Add(m.Grads.Data)
	}
	if err := t.comm().AllReduceInt64(f.Limbs); err != nil {
		return fmt.Errorf("gradient all-reduce: %w", err)
	}
	if m.Grads == nil { // a rank with no unit in this minibatch
		if err := m.SyncGrads(); err != nil {
			return err
		}
	}
	f.Floats(m.Grads.Data)
	return m.UploadGrads()
}

// actorGradsShared is actorGrads over the ranks: see the comment at the
// top of this file. Each term's gradient is the exact sum over the ranks,
// the same on every rank. Its passes are the minibatch's units, whatever
// the limit.
func (t *Trainer) actorGradsShared(step int, b *batch, lo, hi, _ int, terms []lossTerm, then func(k int) error) (loss algo.ActorLoss, ok bool, err error) {
	cfg := &t.cfg
	trajs := b.trajs[lo:hi]
	if cfg.selectiveMask() && !anyToken(b.actorMask[lo:hi]) {
		return loss, false, nil
	}
	n := len(trajs)
	units := t.units(trajs)
	forward := func(u int) (*model.Output, []int, error) {
		tokens, lens := pack(trajs[units[u][0]:units[u][1]])
		out, err := t.policy.Forward(tokens, lens, model.Want{LM: true, Targets: agentTargets(trajs[units[u][0]:units[u][1]])})
		if err != nil {
			return nil, nil, fmt.Errorf("step %d: actor forward: %w", step, err)
		}
		return out, lens, nil
	}
	logp, ent := make([][]float64, n), make([][]float64, n)
	last := -1
	for _, u := range t.own(len(units)) {
		out, lens, err := forward(u)
		if err != nil {
			return loss, false, err
		}
		copy(logp[units[u][0]:], unpack(out.LogProb, lens))
		copy(ent[units[u][0]:], unpack(out.Entropy, lens))
		last = u
	}
	if err := t.gatherRows(units, logp, ent); err != nil {
		return loss, false, fmt.Errorf("step %d: gather log-probs: %w", step, err)
	}
	if loss, err = t.actorLoss(step, b, lo, hi, logp, ent); err != nil {
		return loss, false, err
	}
	for k, term := range terms {
		dlogp, dent := term(&loss)
		if k > 0 {
			last = -1 // each Forward supports one Backward
		}
		err = t.sumGrads(t.policy, &t.actorSum, len(units), last,
			func(u int) error { _, _, err := forward(u); return err },
			func(u int) error {
				p := units[u]
				size := tokenCount(trajs[p[0]:p[1]])
				g := model.Grad{LogProb: packGrad(rowsOf(dlogp, p), size), Entropy: packGrad(rowsOf(dent, p), size)}
				if err := t.policy.Backward(g); err != nil {
					return fmt.Errorf("step %d: actor backward: %w", step, err)
				}
				return nil
			})
		if err != nil {
			return loss, false, err
		}
		if then != nil {
			if err := then(k); err != nil {
				return loss, false, err
			}
		}
	}
	return loss, true, nil
}

// updateCriticShared is updateCritic over the ranks.
func (t *Trainer) updateCriticShared(step int, b *batch, lo, hi int, acc *accumulator) error {
	trajs := b.trajs[lo:hi]
	n := len(trajs)
	units := t.units(trajs)
	forward := func(u int) (*model.Output, []int, error) {
		tokens, lens := pack(trajs[units[u][0]:units[u][1]])
		out, err := t.critic.Forward(tokens, lens, model.Want{Value: true})
		if err != nil {
			return nil, nil, fmt.Errorf("step %d: critic forward: %w", step, err)
		}
		return out, lens, nil
	}
	values := make([][]float64, n)
	last := -1
	for _, u := range t.own(len(units)) {
		out, lens, err := forward(u)
		if err != nil {
			return err
		}
		copy(values[units[u][0]:], unpack(out.Value, lens))
		last = u
	}
	if err := t.gatherRows(units, values); err != nil {
		return fmt.Errorf("step %d: gather values: %w", step, err)
	}
	loss, err := algo.ComputeValueLoss(&t.cfg.Algo, values, b.values[lo:hi], b.ret[lo:hi], b.mask[lo:hi])
	if err != nil {
		return fmt.Errorf("step %d: value loss: %w", step, err)
	}
	if err := finite(step, "value loss", loss.Loss); err != nil {
		return err
	}
	err = t.sumGrads(t.critic, &t.criticSum, len(units), last,
		func(u int) error { _, _, err := forward(u); return err },
		func(u int) error {
			p := units[u]
			g := model.Grad{Value: packGrad(rowsOf(loss.DValue, p), tokenCount(trajs[p[0]:p[1]]))}
			if err := t.critic.Backward(g); err != nil {
				return fmt.Errorf("step %d: critic backward: %w", step, err)
			}
			return nil
		})
	if err != nil {
		return err
	}
	return t.criticStep(step, loss, acc)
}

// tokenCount is the length of pack's tokens.
func tokenCount(trajs []*rollout.Trajectory) int {
	n := 0
	for _, tr := range trajs {
		n += len(tr.Tokens)
	}
	return n
}

// passLimit bounds the tokens of one forward pass that only evaluates
// (the old and reference log-probabilities, the values, the collapse
// metrics): limit, or MicroBatchTokens when smaller, so that setting it
// bounds these passes' activations as it bounds the update's. A
// trajectory's numbers do not depend on its pass (on the CPU at F32,
// bit for bit; see evaluateShared).
func (t *Trainer) passLimit(limit int) int {
	if mb := t.cfg.MicroBatchTokens; mb > 0 {
		return min(limit, mb)
	}
	return limit
}

// sharedForwardTokens bounds evaluateShared's chunks: small enough that a
// batch makes several to deal out (evaluate's 16384 tokens is often the
// whole batch), large enough for efficient products.
const sharedForwardTokens = 2048

// evaluateShared is evaluate over the ranks: chunks of the batch, cut
// independently of the number of ranks, are dealt round-robin and their
// rows gathered, so every rank gets the same numbers for a share of the
// work on any world size. (A trajectory's log-probs do not depend on what
// it is packed with on the CPU at F32 — checked while writing this — so
// they are evaluate's too there.) Without a Comm it is evaluate.
func (t *Trainer) evaluateShared(m *model.Model, trajs []*rollout.Trajectory, want model.Want) (logp, ent, val [][]float64, err error) {
	if t.cfg.Comm == nil {
		return evaluate(m, trajs, want, t.passLimit(maxForwardTokens))
	}
	chunks := forwardChunks(trajs, t.passLimit(sharedForwardTokens))
	want.NoGrad = true
	var sets [][][]float64
	if want.LM {
		logp, ent = make([][]float64, len(trajs)), make([][]float64, len(trajs))
		sets = append(sets, logp, ent)
	}
	if want.Value {
		val = make([][]float64, len(trajs))
		sets = append(sets, val)
	}
	for _, u := range t.own(len(chunks)) {
		p := chunks[u]
		tokens, lens := pack(trajs[p[0]:p[1]])
		if want.LM {
			want.Targets = agentTargets(trajs[p[0]:p[1]])
		}
		out, err := m.Forward(tokens, lens, want)
		if err != nil {
			return nil, nil, nil, err
		}
		if want.LM {
			copy(logp[p[0]:], unpack(out.LogProb, lens))
			copy(ent[p[0]:], unpack(out.Entropy, lens))
		}
		if want.Value {
			copy(val[p[0]:], unpack(out.Value, lens))
		}
	}
	if err := t.gatherRows(chunks, sets...); err != nil {
		return nil, nil, nil, fmt.Errorf("gather: %w", err)
	}
	return logp, ent, val, nil
}
