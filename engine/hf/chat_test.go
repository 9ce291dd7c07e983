package hf

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const qwenSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

func readTemplate(t *testing.T, path string) *ChatTemplate {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := ParseChatTemplate(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestChatMLTemplateGolden pins the template Save writes; gen_chat_golden.js
// renders it with the reference Jinja and checks it against Qwen2.5's.
func TestChatMLTemplateGolden(t *testing.T) {
	const path = "testdata/chatml_template.jinja"
	got := ChatMLTemplate(qwenSystem)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("ChatMLTemplate changed; if on purpose run go test -update and node gen_chat_golden.js (see its header)\ngot  %s\nwant %s", got, want)
	}
	tmpl, err := ParseChatTemplate(got)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.DefaultSystem != qwenSystem || tmpl.Reasoning {
		t.Errorf("parsed back: DefaultSystem %q, Reasoning %v", tmpl.DefaultSystem, tmpl.Reasoning)
	}
	odd := "a 'quoted' \\ path\nand\ttab"
	if tmpl, err := ParseChatTemplate(ChatMLTemplate(odd)); err != nil || tmpl.DefaultSystem != odd {
		t.Errorf("default system %q did not survive quoting: %+v, %v", odd, tmpl, err)
	}
	if tmpl, err := ParseChatTemplate(ChatMLTemplate("")); err != nil || tmpl.DefaultSystem != "" {
		t.Errorf("no default system: %+v, %v", tmpl, err)
	}
}

// TestChatTemplateQwen25 renders the conversations of chat_golden.json
// (rendered by transformers.js's Jinja through Qwen2.5's real template) and
// compares byte for byte.
func TestChatTemplateQwen25(t *testing.T) {
	tmpl := readTemplate(t, "testdata/qwen2.5_chat_template.jinja")
	if tmpl.DefaultSystem != qwenSystem || tmpl.Reasoning {
		t.Fatalf("parsed Qwen2.5 template: DefaultSystem %q, Reasoning %v", tmpl.DefaultSystem, tmpl.Reasoning)
	}
	data, err := os.ReadFile("testdata/chat_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Messages            []Message
		AddGenerationPrompt bool `json:"add_generation_prompt"`
		Text                string
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 8 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for i, c := range cases {
		got, err := tmpl.Render(c.Messages, c.AddGenerationPrompt)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.Text {
			t.Errorf("case %d: Render =\n%q\nJinja reference\n%q", i, got, c.Text)
		}
	}
}

// TestChatTemplateQwen3 checks Qwen3's reasoning rules (written from the
// template's text: transformers.js cannot parse it).
func TestChatTemplateQwen3(t *testing.T) {
	tmpl := readTemplate(t, "testdata/qwen3_chat_template.jinja")
	if tmpl.DefaultSystem != "" || !tmpl.Reasoning {
		t.Fatalf("parsed Qwen3 template: DefaultSystem %q, Reasoning %v", tmpl.DefaultSystem, tmpl.Reasoning)
	}
	for _, c := range []struct {
		msgs []Message
		gen  bool
		want string
	}{
		{[]Message{{"user", "hi"}}, true, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{ // reasoning before the last user message is dropped
			[]Message{{"system", "S"}, {"user", "a"}, {"assistant", "<think>\nplan\n</think>\n\nRight"}, {"user", "b"}}, true,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nRight<|im_end|>\n" +
				"<|im_start|>user\nb<|im_end|>\n<|im_start|>assistant\n",
		},
		{ // after it: kept and normalised; the final turn always gets a block
			[]Message{{"user", "a"}, {"assistant", "<think>plan</think>Left"}, {"assistant", "Up"}}, false,
			"<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\nplan\n</think>\n\nLeft<|im_end|>\n" +
				"<|im_start|>assistant\n<think>\n\n</think>\n\nUp<|im_end|>\n",
		},
		{ // a middle turn after the query without reasoning stays bare
			[]Message{{"user", "a"}, {"assistant", "x"}, {"assistant", "y"}}, false,
			"<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nx<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\ny<|im_end|>\n",
		},
	} {
		got, err := tmpl.Render(c.msgs, c.gen)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Render(%v) =\n%q\nwant\n%q", c.msgs, got, c.want)
		}
	}
}

// TestChatTemplateJinja2Golden renders the conversations of
// chat_golden_jinja2.json (tool, developer and tool-response user turns,
// rendered by Python's Jinja2 through Qwen2.5's, Qwen3's and our ChatML
// template: gen_chat_golden.py) and compares byte for byte.
func TestChatTemplateJinja2Golden(t *testing.T) {
	tmpls := map[string]*ChatTemplate{
		"qwen2.5": readTemplate(t, "testdata/qwen2.5_chat_template.jinja"),
		"qwen3":   readTemplate(t, "testdata/qwen3_chat_template.jinja"),
		"chatml":  readTemplate(t, "testdata/chatml_template.jinja"),
	}
	for name, want := range map[string]bool{"qwen2.5": true, "qwen3": true, "chatml": false} {
		if tmpls[name].ToolResponses != want {
			t.Errorf("parsed %s template: ToolResponses %v, want %v", name, tmpls[name].ToolResponses, want)
		}
	}
	data, err := os.ReadFile("testdata/chat_golden_jinja2.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Template            string
		Messages            []Message
		AddGenerationPrompt bool `json:"add_generation_prompt"`
		Text                string
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	roles := map[string]bool{}
	for i, c := range cases {
		tmpl, ok := tmpls[c.Template]
		if !ok {
			t.Fatalf("case %d: unknown template %q", i, c.Template)
		}
		for _, m := range c.Messages {
			roles[m.Role] = true
		}
		got, err := tmpl.Render(c.Messages, c.AddGenerationPrompt)
		if err != nil {
			t.Errorf("case %d (%s): %v", i, c.Template, err)
			continue
		}
		if got != c.Text {
			t.Errorf("case %d (%s, %v): Render =\n%q\nJinja2 reference\n%q", i, c.Template, c.Messages, got, c.Text)
		}
	}
	if !roles["tool"] || !roles["developer"] || len(cases) < 60 {
		t.Errorf("%d golden cases with roles %v: want tool and developer turns among them", len(cases), roles)
	}
}

// TestPromptContinue checks that a rollout built from Prompt and Continue
// is the template's rendering of the conversation.
func TestPromptContinue(t *testing.T) {
	tmpl := readTemplate(t, "testdata/qwen2.5_chat_template.jinja")
	for _, system := range []string{"", "You solve Sokoban."} {
		text := tmpl.Prompt(system, "Turn 1:\nP_X_O") + "<think>push</think><answer>Right</answer>" +
			tmpl.Continue("Reward: 1\nTurn 2:\n_PX_O") + "<answer>Right</answer>" + "<|im_end|>\n"
		msgs := []Message{{"user", "Turn 1:\nP_X_O"}, {"assistant", "<think>push</think><answer>Right</answer>"},
			{"user", "Reward: 1\nTurn 2:\n_PX_O"}, {"assistant", "<answer>Right</answer>"}}
		if system != "" {
			msgs = append([]Message{{"system", system}}, msgs...)
		}
		want, err := tmpl.Render(msgs, false)
		if err != nil {
			t.Fatal(err)
		}
		if text != want {
			t.Errorf("system %q: Prompt/Continue give\n%q\nRender gives\n%q", system, text, want)
		}
	}
	if got := (&ChatTemplate{}).Prompt("", "hi"); got != "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("no system at all: %q", got)
	}
}

func TestChatTemplateErrors(t *testing.T) {
	llama3 := "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}"
	if _, err := ParseChatTemplate(llama3); err == nil || !strings.Contains(err.Error(), "not a ChatML template (it lacks <|im_start|>)") {
		t.Errorf("Llama 3 template: %v", err)
	}
	tmpl, err := ParseChatTemplate(ChatMLTemplate(""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render([]Message{{"user", "a"}, {"function", "{}"}}, true)
	if want := `chat template: message 1: role "function" is not supported (want system, user, assistant, tool or developer)`; err == nil || err.Error() != want {
		t.Errorf("function role: %v, want %s", err, want)
	}
}
