package train

import (
	"testing"

	"github.com/ragen-go/ragen/engine/model"
)

func policyOf(t *testing.T, tr *Trainer) *model.Model {
	t.Helper()
	m, err := tr.Policy()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
