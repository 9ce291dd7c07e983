package metrics

// Step is the record of one training step: the step number and every metric
// measured in it, by name (see names.go).
type Step struct {
	Step   int                `json:"step"`
	Values map[string]float64 `json:"values"`
}

// Event is something the collapse monitor (or the trainer) noticed: a kind
// such as "entropy_drop", the step, a one-line message and the evidence.
type Event struct {
	Step     int                `json:"step"`
	Kind     string             `json:"kind"`
	Message  string             `json:"message"`
	Evidence map[string]float64 `json:"evidence,omitempty"`
}

// History is the ordered record of a run: its steps and events.
type History struct {
	Name   string  `json:"name,omitempty"` // label in plots and tables
	Steps  []Step  `json:"steps"`
	Events []Event `json:"events,omitempty"`
	// Samples are episodes kept for reading (see Sample).
	Samples []Sample `json:"samples,omitempty"`
}

// Series returns the steps at which the metric was recorded and its values
// there, in step order. A metric absent from a step is skipped.
func (h *History) Series(name string) (steps []int, values []float64) {
	for _, s := range h.Steps {
		if v, ok := s.Values[name]; ok {
			steps = append(steps, s.Step)
			values = append(values, v)
		}
	}
	return steps, values
}
