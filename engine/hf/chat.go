package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // "system", "user", "assistant", "tool" or "developer"
	Content string
}

// ChatTemplate renders conversations the way a Qwen model was trained to
// read them, ChatML:
//
//	<|im_start|>system\n{system}<|im_end|>\n
//	<|im_start|>user\n{content}<|im_end|>\n
//	<|im_start|>assistant\n{content}<|im_end|>\n
//	...
//	<|im_start|>assistant\n                       (the generation prompt)
//
// We do not run Jinja: ParseChatTemplate recognises the ChatML family in
// tokenizer_config.json's chat_template and records the ways its members
// differ (a default system message; Qwen's tool responses; Qwen3's
// reasoning blocks), and Render reproduces what the template renders for
// conversations without tool calls (an assistant message's tool_calls
// field, which Message does not have).
type ChatTemplate struct {
	// Source is the Jinja text as tokenizer_config.json holds it.
	Source string
	// DefaultSystem is the system message rendered when the conversation
	// does not start with one; "" renders no system turn then. Qwen2.5's is
	// "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
	DefaultSystem string
	// ToolResponses marks Qwen's templates (2.5 and 3), which render a run
	// of consecutive tool messages as one user turn of
	// "\n<tool_response>\n{content}\n</tool_response>" blocks and have no
	// branch for other roles than system, user, assistant and tool: a
	// developer message renders nothing. Plain ChatML (ChatMLTemplate)
	// renders every message, tool and developer ones too, as a turn of its
	// role.
	ToolResponses bool
	// Reasoning marks Qwen3's template: assistant turns after the last user
	// message are rendered with a <think>…</think> block (empty if their
	// content has none), those before it without their reasoning. A user
	// message that is a tool response (starts with <tool_response> and ends
	// with </tool_response>) is not the last user message for this. (Its
	// enable_thinking=false mode adds "<think>\n\n</think>\n\n" after the
	// generation prompt; append it yourself.)
	Reasoning bool
	// EOS is tokenizer_config.json's eos_token: the token that ends an
	// assistant turn ("<|im_end|>" for instruct models; "" if unset).
	EOS string
}

// The ChatML markers.
const (
	imStart = "<|im_start|>"
	imEnd   = "<|im_end|>"
)

// defaultSystemRE finds a system turn written as one string literal, as
// Qwen2.5 writes its default: '<|im_start|>system\n…<|im_end|>\n'. A
// system turn built from messages[0] has a quote before its content and
// does not match.
var defaultSystemRE = regexp.MustCompile(`'<\|im_start\|>system\\n((?:[^'\\]|\\.)*)<\|im_end\|>\\n'`)

// ParseChatTemplate recognises a ChatML chat template. Any other template
// (Llama 3's header ids, Mistral's [INST], ...) is an error: we render
// ChatML only.
func ParseChatTemplate(src string) (*ChatTemplate, error) {
	for _, want := range []string{imStart, imEnd, "add_generation_prompt", `'<|im_start|>assistant\n'`} {
		if !strings.Contains(src, want) {
			return nil, fmt.Errorf("chat_template: not a ChatML template (it lacks %s); only Qwen's ChatML templates are supported", want)
		}
	}
	t := &ChatTemplate{
		Source:        src,
		ToolResponses: strings.Contains(src, `'\n<tool_response>\n'`),
		Reasoning:     strings.Contains(src, "reasoning_content"),
	}
	if m := defaultSystemRE.FindStringSubmatch(src); m != nil {
		s, err := unquoteJinja(m[1])
		if err != nil {
			return nil, fmt.Errorf("chat_template: default system message: %w", err)
		}
		t.DefaultSystem = s
	}
	return t, nil
}

// unquoteJinja undoes the backslash escapes of a Jinja string literal.
func unquoteJinja(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i++; i == len(s) {
			return "", errors.New("dangling backslash")
		}
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\', '\'', '"':
			b.WriteByte(s[i])
		default:
			return "", fmt.Errorf("unsupported escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

// quoteJinja writes s as the inside of a single-quoted Jinja string.
func quoteJinja(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\t", `\t`).Replace(s)
}

// ChatMLTemplate returns the Jinja source of the plain ChatML template with
// the given default system message ("" for none): the template Save writes
// for our models, equal to Qwen2.5's for conversations without tools.
func ChatMLTemplate(defaultSystem string) string {
	first := "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
	if defaultSystem != "" {
		first += "{%- else %}{{- '<|im_start|>system\\n" + quoteJinja(defaultSystem) + "<|im_end|>\\n' }}"
	}
	return first + "{%- endif %}" +
		"{%- for message in messages %}{%- if not (loop.first and message['role'] == 'system') %}" +
		"{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}" +
		"{%- endif %}{%- endfor %}" +
		"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
}

// Render writes the conversation as the template does, followed by the
// generation prompt "<|im_start|>assistant\n" if addGenerationPrompt. A
// system message may come anywhere. Tool and developer messages render as
// the template renders them (see ToolResponses); any other role is an
// error.
func (t *ChatTemplate) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	lastQuery := len(msgs) - 1 // Qwen3: index of the last user message that is no tool response
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && !isToolResponse(msgs[i].Content) {
			lastQuery = i
			break
		}
	}
	if len(msgs) == 0 || msgs[0].Role != "system" {
		if t.DefaultSystem != "" {
			b.WriteString(imStart + "system\n" + t.DefaultSystem + imEnd + "\n")
		}
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user":
		case "assistant":
			if t.Reasoning {
				b.WriteString(imStart + "assistant\n" + t.qwen3Assistant(m.Content, i > lastQuery, i == len(msgs)-1) + imEnd + "\n")
				continue
			}
		case "tool":
			if t.ToolResponses {
				// Consecutive tool messages share one user turn.
				if i == 0 || msgs[i-1].Role != "tool" {
					b.WriteString(imStart + "user")
				}
				b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
				if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
					b.WriteString(imEnd + "\n")
				}
				continue
			}
		case "developer":
			if t.ToolResponses {
				continue // Qwen's templates have no branch for it
			}
		default:
			return "", fmt.Errorf("chat template: message %d: role %q is not supported (want system, user, assistant, tool or developer)", i, m.Role)
		}
		b.WriteString(imStart + m.Role + "\n" + m.Content + imEnd + "\n")
	}
	if addGenerationPrompt {
		b.WriteString(imStart + "assistant\n")
	}
	return b.String(), nil
}

// isToolResponse reports whether a user message is a tool's response
// written into the user turn, which Qwen3's template does not count as the
// user's query.
func isToolResponse(content string) bool {
	return strings.HasPrefix(content, "<tool_response>") && strings.HasSuffix(content, "</tool_response>")
}

// Prompt is the context before a conversation's first response: the system
// turn (system, or DefaultSystem when system is ""; none if both are
// empty), the user turn, and the generation prompt. It equals Render of
// those two messages with the generation prompt.
func (t *ChatTemplate) Prompt(system, user string) string {
	if system == "" {
		system = t.DefaultSystem
	}
	s := ""
	if system != "" {
		s = imStart + "system\n" + system + imEnd + "\n"
	}
	return s + imStart + "user\n" + user + imEnd + "\n" + imStart + "assistant\n"
}

// Continue is the context between a response and the next one in a
// multi-turn rollout, where the whole conversation is one token sequence:
// the end of the assistant turn, the user turn, the generation prompt.
// Prompt + response₁ + Continue(user₂) + response₂ + … + imEnd + "\n" is
// what Render gives for the conversation (for Qwen3's template, Render
// drops earlier turns' reasoning; a rollout keeps it, as the policy saw it).
func (t *ChatTemplate) Continue(user string) string {
	return imEnd + "\n" + imStart + "user\n" + user + imEnd + "\n" + imStart + "assistant\n"
}

// qwen3Assistant is Qwen3's rendering of an assistant message: the
// reasoning (between <think> and the first </think>) is split from the
// answer (after the last </think>); it is kept in a normalised
// "<think>\n…\n</think>\n\n" block after the last user message — always for
// the final message, else only if not empty — and dropped before it.
func (t *ChatTemplate) qwen3Assistant(content string, afterQuery, last bool) string {
	reasoning := ""
	if strings.Contains(content, "</think>") {
		parts := strings.Split(content, "</think>")
		before := strings.TrimRight(parts[0], "\n")
		if k := strings.LastIndex(before, "<think>"); k >= 0 {
			before = before[k+len("<think>"):]
		}
		reasoning = strings.TrimLeft(before, "\n")
		content = strings.TrimLeft(parts[len(parts)-1], "\n")
	}
	if afterQuery && (last || reasoning != "") {
		return "<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n")
	}
	return content
}

// tokenizerConfig is the part of tokenizer_config.json we read and write.
type tokenizerConfig struct {
	ChatTemplate json.RawMessage `json:"chat_template,omitempty"` // a string, or a list of {name, template}
	EOSToken     json.RawMessage `json:"eos_token,omitempty"`     // a string, or {"content": ...}
}

// loadChatTemplate reads the chat template of tokenizer_config.json at
// path: nil if the file or its chat_template is absent.
func loadChatTemplate(path string) (*ChatTemplate, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tc tokenizerConfig
	if err := json.Unmarshal(data, &tc); err != nil {
		return nil, fmt.Errorf("%s: %w", TokenizerConfigFile, err)
	}
	if len(tc.ChatTemplate) == 0 || string(tc.ChatTemplate) == "null" {
		return nil, nil
	}
	var src string
	if err := json.Unmarshal(tc.ChatTemplate, &src); err != nil {
		var named []struct{ Name, Template string }
		if json.Unmarshal(tc.ChatTemplate, &named) != nil {
			return nil, fmt.Errorf("%s: chat_template: must be a string or a list of {name, template}", TokenizerConfigFile)
		}
		for _, n := range named {
			if n.Name == "default" {
				src = n.Template
			}
		}
		if src == "" {
			return nil, fmt.Errorf("%s: chat_template: the list has no template named \"default\"", TokenizerConfigFile)
		}
	}
	t, err := ParseChatTemplate(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TokenizerConfigFile, err)
	}
	if len(tc.EOSToken) > 0 && string(tc.EOSToken) != "null" {
		var obj struct{ Content string }
		if json.Unmarshal(tc.EOSToken, &t.EOS) != nil && json.Unmarshal(tc.EOSToken, &obj) == nil {
			t.EOS = obj.Content
		}
	}
	return t, nil
}
