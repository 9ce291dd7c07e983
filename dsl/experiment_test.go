package dsl

import (
	"errors"
	"reflect"
	"testing"
)

// TestMappedFieldsRoundTrip: each Experiment field tagged with a trainer
// field reaches that field through Config, and an error the trainer
// reports under any of its keys names the Experiment's field.
func TestMappedFieldsRoundTrip(t *testing.T) {
	samples := map[string]any{ // values the trainer accepts where the kind's sample would not do
		"ContextLength": 512, "VocabSize": 400, "Backend": "cpu", "Precision": "bf16", "Monitor": "stop",
	}
	companions := map[string]func(*Experiment){ // fields valid only with another one set
		"CollapseTrajectory": func(e *Experiment) { e.CollapseEvery = 1 },
	}
	n := 0
	for _, m := range mappedFields {
		if m.manual {
			continue
		}
		e := Experiment{Env: Bandit()}
		if set, ok := companions[m.path]; ok {
			set(&e)
		}
		v := reflect.ValueOf(&e).Elem().FieldByIndex(m.index)
		x, ok := samples[m.path]
		if !ok {
			switch v.Kind() {
			case reflect.Int, reflect.Int64:
				x = 3
			case reflect.Float64:
				x = 0.125
			case reflect.Bool:
				x = true
			default:
				t.Fatalf("%s: no sample value for %s", m.path, v.Type())
			}
		}
		v.Set(reflect.ValueOf(x).Convert(v.Type()))
		c, err := e.Config()
		if err != nil {
			t.Errorf("%s = %v: %v", m.path, x, err)
			continue
		}
		got := m.target.Value(&c, false)
		if want := reflect.ValueOf(x).Convert(got.Type()); !got.Equal(want) {
			t.Errorf("%s = %v: train.Config.%s = %v", m.path, x, m.target.Path, got)
		}
		n++
	}
	if n < 20 {
		t.Errorf("only %d Experiment fields map to the trainer's", n)
	}
	for key, field := range trainField {
		var fe *FieldError
		if err := (Experiment{}).fieldOf(errors.New(key + ": bad")); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("trainer error %q: %v, want it to name %s", key+": bad", err, field)
		}
	}
}

// TestMappedFieldsNegative: a negative number is refused by the field's
// name, "> 0" where zero takes a positive default, "≥ 0" where the
// default is zero; a seed may be negative.
func TestMappedFieldsNegative(t *testing.T) {
	for _, tc := range []struct {
		e    Experiment
		want string
	}{
		{Experiment{Env: Bandit(), ValEpisodes: -1}, "ValEpisodes: must be > 0 (got -1)"},
		{Experiment{Env: Bandit(), CheckpointEvery: -1}, "CheckpointEvery: must be ≥ 0 (got -1)"},
		{Experiment{Env: Bandit(), MicroBatchTokens: -8}, "MicroBatchTokens: must be ≥ 0 (got -8)"},
		{Experiment{Env: Bandit(), WarmStart: WarmStart{LR: -0.5}}, "WarmStart.LR: must be > 0 (got -0.5)"},
		{Experiment{Env: Bandit(), Seed: -5}, "<nil>"},
	} {
		got := "<nil>"
		if err := tc.e.Validate(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
}
