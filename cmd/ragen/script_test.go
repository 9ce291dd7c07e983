package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/stdlib"
)

// Every example compiles against the current API (without running: the
// examples train for a while).
func TestExamplesCompile(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		i, err := stdlib.NewInterpreter(stdlib.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := i.CompilePath(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestScriptCommand(t *testing.T) {
	if err := runScript([]string{"-q", "../../dsl/testdata/scripts/display.go"}); err != nil {
		t.Errorf("display.go: %v", err)
	}
	err := runScript([]string{"../../dsl/testdata/scripts/err_reward_name.go"})
	if err == nil || !strings.Contains(err.Error(), "reward expression: unknown name sucess (1:1)") {
		t.Errorf("err_reward_name.go: %v", err)
	}
	if err := runScript(nil); err == nil || err.Error() != "no file to run" {
		t.Errorf("no file: %v", err)
	}
}
