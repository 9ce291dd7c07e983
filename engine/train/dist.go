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
//   - update: each minibatch's trajectories are dealt round-robin; a rank
//     computes the log-probs (values) of its own, alone, and gathers the
//     others', so every rank computes the same loss; then the gradient of
//     each of its trajectories, alone, summed exactly (dist.Fixed) and
//     all-reduced: the sum of per-trajectory gradients is the same bits
//     whatever the number of ranks, and every rank takes the same AdamW
//     step;
//   - rank 0 alone writes the run directory.
//
// Per-trajectory gradients are not the packed minibatch's bits, so a run
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

// own returns the positions 0..n-1 of a minibatch that this rank computes.
func (t *Trainer) own(n int) []int {
	c := t.comm()
	var out []int
	for k := c.Rank(); k < n; k += c.Size() {
		out = append(out, k)
	}
	return out
}

// gatherRows fills, on every rank, the rows the other ranks computed: rank
// r has filled rows[k] (of each set) for its own k (see own).
func (t *Trainer) gatherRows(n int, sets ...[][]float64) error {
	c := t.comm()
	var buf []byte
	for _, k := range t.own(n) {
		for _, rows := range sets {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(len(rows[k])))
			for _, v := range rows[k] {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
			}
		}
	}
	all, err := c.AllGather(buf)
	if err != nil {
		return err
	}
	for r, b := range all {
		for k := r; k < n; k += c.Size() {
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
	return nil
}

// sumGrads runs backward(k) for each of this rank's positions k of a
// minibatch of n, each from zero gradients, adds each gradient exactly into
// sum, all-reduces it and leaves the total in m's gradients. forward(k)
// must run the forward pass of position k alone; the last one run before
// is position last (its activations are reused).
func (t *Trainer) sumGrads(m *model.Model, sum **dist.Fixed, n, last int, forward, backward func(k int) error) error {
	if *sum == nil {
		*sum = dist.NewFixed(m.Layout.Size)
	}
	f := *sum
	f.Reset()
	own := t.own(n)
	for j := len(own) - 1; j >= 0; j-- {
		k := own[j]
		if k != last {
			if err := forward(k); err != nil {
				return err
			}
		}
		last = -1
		m.ZeroGrad()
		if err := backward(k); err != nil {
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
	if m.Grads == nil { // a rank with no trajectory in this minibatch
		if err := m.SyncGrads(); err != nil {
			return err
		}
	}
	f.Floats(m.Grads.Data)
	return m.UploadGrads()
}

// updateActorShared is updateActor over the ranks: see the comment at the
// top of this file.
func (t *Trainer) updateActorShared(step int, b *batch, lo, hi int, acc *accumulator) error {
	cfg := &t.cfg
	trajs := b.trajs[lo:hi]
	if cfg.selectiveMask() && !anyToken(b.actorMask[lo:hi]) {
		return nil
	}
	n := len(trajs)
	forward := func(k int) (*model.Output, []int, error) {
		tokens, lens := pack(trajs[k : k+1])
		out, err := t.policy.Forward(tokens, lens, model.Want{LM: true})
		if err != nil {
			return nil, nil, fmt.Errorf("step %d: actor forward: %w", step, err)
		}
		return out, lens, nil
	}
	logp, ent := make([][]float64, n), make([][]float64, n)
	last := -1
	for _, k := range t.own(n) {
		out, lens, err := forward(k)
		if err != nil {
			return err
		}
		logp[k] = unpack(out.LogProb, lens)[0]
		ent[k] = unpack(out.Entropy, lens)[0]
		last = k
	}
	if err := t.gatherRows(n, logp, ent); err != nil {
		return fmt.Errorf("step %d: gather log-probs: %w", step, err)
	}
	in := algo.ActorInputs{Mask: b.actorMask[lo:hi], Logp: logp, OldLogp: b.oldLogp[lo:hi], Adv: b.adv[lo:hi]}
	if cfg.Algo.EntropyCoef > 0 {
		in.Entropy = ent
	}
	if b.refLogp != nil {
		in.RefLogp = b.refLogp[lo:hi]
	}
	loss, err := algo.ComputeActorLoss(&cfg.Algo, in)
	if err != nil {
		return fmt.Errorf("step %d: actor loss: %w", step, err)
	}
	if err := finite(step, "actor loss", loss.Loss); err != nil {
		return err
	}
	err = t.sumGrads(t.policy, &t.actorSum, n, last,
		func(k int) error { _, _, err := forward(k); return err },
		func(k int) error {
			p := [2]int{k, k + 1}
			size := len(trajs[k].Tokens)
			g := model.Grad{LogProb: packGrad(rowsOf(loss.DLogp, p), size), Entropy: packGrad(rowsOf(loss.DEntropy, p), size)}
			if err := t.policy.Backward(g); err != nil {
				return fmt.Errorf("step %d: actor backward: %w", step, err)
			}
			return nil
		})
	if err != nil {
		return err
	}
	return t.actorStep(step, loss, b, acc)
}

// updateCriticShared is updateCritic over the ranks.
func (t *Trainer) updateCriticShared(step int, b *batch, lo, hi int, acc *accumulator) error {
	trajs := b.trajs[lo:hi]
	n := len(trajs)
	forward := func(k int) (*model.Output, []int, error) {
		tokens, lens := pack(trajs[k : k+1])
		out, err := t.critic.Forward(tokens, lens, model.Want{Value: true})
		if err != nil {
			return nil, nil, fmt.Errorf("step %d: critic forward: %w", step, err)
		}
		return out, lens, nil
	}
	values := make([][]float64, n)
	last := -1
	for _, k := range t.own(n) {
		out, lens, err := forward(k)
		if err != nil {
			return err
		}
		values[k] = unpack(out.Value, lens)[0]
		last = k
	}
	if err := t.gatherRows(n, values); err != nil {
		return fmt.Errorf("step %d: gather values: %w", step, err)
	}
	loss, err := algo.ComputeValueLoss(&t.cfg.Algo, values, b.values[lo:hi], b.ret[lo:hi], b.mask[lo:hi])
	if err != nil {
		return fmt.Errorf("step %d: value loss: %w", step, err)
	}
	if err := finite(step, "value loss", loss.Loss); err != nil {
		return err
	}
	err = t.sumGrads(t.critic, &t.criticSum, n, last,
		func(k int) error { _, _, err := forward(k); return err },
		func(k int) error {
			g := model.Grad{Value: packGrad(rowsOf(loss.DValue, [2]int{k, k + 1}), len(trajs[k].Tokens))}
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
