// Command qwencorpus writes the text corpus of TestQwenParity
// (../qwen_parity_corpus.json, a JSON array of strings): environment
// conversations played by every registered environment's expert (system,
// user and assistant messages, whole conversations and single lines), the
// environments' golden transcripts, Go source of this repository in chunks,
// and hand-written and seeded random strings stressing the pre-tokenizer
// (Unicode scripts and marks, digits of many scripts, whitespace runs,
// contractions, added tokens and their prefixes). Same repository, same
// corpus. Run from the repository root:
//
//	go run ./engine/tokenizer/testdata/qwencorpus
//
// then regenerate the expected ids with gen_qwen_parity.js (see
// scripts/qwen-parity).
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "qwencorpus:", err)
		os.Exit(1)
	}
}

func run() error {
	var c corpus
	c.seen = map[string]bool{}
	rng := rand.New(rand.NewPCG(2026, 11))

	// Conversations played by the experts, think and no-think, with
	// imperfect turns.
	for _, name := range envs.Names() {
		for _, think := range []bool{true, false} {
			env, err := envs.New(name, nil)
			if err != nil {
				return err
			}
			demos, err := envs.Demonstrations(env, envs.DemoConfig{
				Episodes: 6, Seed: 100, ImperfectRate: 0.4,
				Turn: envs.TurnConfig{Think: think}, Prompt: envs.PromptConfig{Think: think},
			})
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			for _, d := range demos {
				var whole strings.Builder
				for _, m := range d.Messages {
					c.add(m.Content)
					fmt.Fprintf(&whole, "<|im_start|>%s\n%s<|im_end|>\n", m.Role, m.Content)
					for _, line := range strings.Split(m.Content, "\n") {
						c.add(line)
						c.add(line + "\n")
					}
				}
				c.add(whole.String())
			}
		}
	}
	// Golden transcripts and renders, whole and by paragraph.
	goldens, _ := filepath.Glob("envs/*/testdata/*.golden")
	more, _ := filepath.Glob("envs/testdata/*.golden")
	for _, path := range append(goldens, more...) {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		c.add(string(b))
		for _, p := range strings.Split(string(b), "\n\n") {
			c.add(p)
		}
	}
	// Go source in chunks of a few lines, tabs and all.
	srcs, _ := filepath.Glob("engine/tokenizer/*.go")
	envSrcs, _ := filepath.Glob("envs/*.go")
	for _, path := range append(srcs, envSrcs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i += 7 {
			c.add(strings.Join(lines[i:min(i+7, len(lines))], "\n"))
		}
	}
	c.add(handWritten...)
	// Numbers in many formats.
	for i := 0; i < 250; i++ {
		c.add(number(rng))
	}
	// Whitespace runs around words.
	spaces := []string{" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2003", "\u2028", "\v", "\f", " \n ", "\t\n"}
	words := []string{"a", "word", "Word", "123", "!", "'s", "日本", "😀", "<|im_end|>", ".", "é", "x_y", ""}
	for i := 0; i < 250; i++ {
		var b strings.Builder
		for j := 0; j < 1+rng.IntN(6); j++ {
			b.WriteString(words[rng.IntN(len(words))])
			for k := 0; k < 1+rng.IntN(3); k++ {
				b.WriteString(spaces[rng.IntN(len(spaces))])
			}
		}
		c.add(b.String())
	}
	// Random strings over an alphabet of pre-tokenizer edge cases.
	for i := 0; i < 900; i++ {
		var b strings.Builder
		for j := 0; j < 1+rng.IntN(30); j++ {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		c.add(b.String())
	}
	data, err := json.MarshalIndent(c.texts, "", " ")
	if err != nil {
		return err
	}
	const out = "engine/tokenizer/testdata/qwen_parity_corpus.json"
	if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d texts, %d bytes\n", out, len(c.texts), len(data))
	return nil
}

type corpus struct {
	texts []string
	seen  map[string]bool
}

// add appends the texts not seen before, skipping U+0085 and U+FEFF, which
// \s matches differently in JavaScript than in Oniguruma (the reference
// would be wrong there, see TestQwenParity).
func (c *corpus) add(texts ...string) {
	for _, t := range texts {
		if c.seen[t] || strings.ContainsAny(t, "\u0085\ufeff") {
			continue
		}
		c.seen[t] = true
		c.texts = append(c.texts, t)
	}
}

func number(rng *rand.Rand) string {
	switch rng.IntN(8) {
	case 0:
		return fmt.Sprint(rng.Int64N(1_000_000_000_000))
	case 1:
		return fmt.Sprintf("%.*f", rng.IntN(8), rng.NormFloat64()*1000)
	case 2:
		return fmt.Sprintf("%e", rng.NormFloat64()*1e9)
	case 3:
		n := rng.Int64N(1e9)
		s := fmt.Sprint(n)
		var b strings.Builder
		for i, ch := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(ch)
		}
		return "$" + b.String()
	case 4:
		return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", 1900+rng.IntN(200), 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
	case 5:
		return fmt.Sprintf("%d + %d * (%d - %d) = ?", rng.IntN(100), rng.IntN(100), rng.IntN(1000), rng.IntN(10))
	case 6:
		return fmt.Sprintf("0x%x 0b%b %o%%", rng.Uint32(), rng.IntN(256), rng.IntN(4096))
	}
	return fmt.Sprintf("v%d.%d.%d-rc%d", rng.IntN(10), rng.IntN(30), rng.IntN(100), rng.IntN(5))
}

var alphabet = []string{
	"a", "b", "T", "h", "e", "Z", " the", " of", "ing", "I", "'", "'s", "'S", "'ll", "'LL", "'d", "'re", "'ve", "'m", "'t",
	"1", "9", "0", "42", "١", "٣", "४", "１", "Ⅻ", "½", "²", "①",
	" ", " ", "  ", "\n", "\r\n", "\r", "\t", "\u00a0", "\u3000", "\u2003", "\u2009", "\u2028", "\u200b",
	"!", ".", ",", "?", "_", "#", "<", ">", "-", "--", "...", "…", "(", ")", "{", "}", "[", "]", "\"", "`", "\\", "/", "|", "||", "@", "$", "%", "^", "&", "*", "~", "=",
	"é", "e\u0301", "ß", "Ω", "ж", "Ж", "ש", "ع", "ن", "ก", "ั", "ि", "한", "ᄀ", "日", "本", "語", "の", "ア", "ｱ",
	"😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "\u0301", "\u0000", "\u001b", "\u007f", "\U0001F9EA",
	"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<answer>", "</answer>", "<|im_", "<think", "</answer",
}

var handWritten = []string{
	"Hello world", "I'm here, you'RE there. DON'T! it's 'sa", "12345 3.14159 1,000,000 year 2024",
	"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nTurn 1:\n#_X_P#\n#__O_#<|im_end|>\n<|im_start|>assistant\n",
	"<think>The box is left of the target</think><answer>Right || Up</answer><|im_end|>",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "def f(x):\n    return x ** 2  # square\n\n\n",
	"日本語のテキスト、中文文本。한국어", "emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷", "مرحبا بالعالم", "Ελληνικά Русский",
	"a   b\t\t c \n\n   \r\n  \u00a0\u3000 end   ", "   leading", "trailing   ", "\n\n\n", "",
	"café naïve résumé", "cafe\u0301 (decomposed, NFC composes it)", "Ⅻ ½ ١٢٣ ①②", "$$$ ?? !!! ... --- ===", "<|im_sta <think </answer",
	"https://example.com/path?q=1&r=two#frag", "user@example.com", "x\u2003 y\u2009z",
	"You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
	"{\"name\": \"search\", \"arguments\": {\"query\": \"red shoes\", \"max_price\": 49.99}}",
	"| col | val |\n|-----|-----|\n| a   | 1   |\n", "$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$", "E = mc² ≈ 9×10¹⁶ J",
	"SELECT * FROM users WHERE id = 42;", "<div class=\"a\">&amp; &lt;tag&gt;</div>", "#!/bin/sh\nset -eu\necho \"$HOME\"\n",
	"    indented 4\n\tindented tab\n  \t mixed", "line1\r\nline2\rline3\nline4", "ALL CAPS SHOUTING'S FINE", "camelCaseIdentifier snake_case_name kebab-case",
	"The quick brown fox jumps over the lazy dog.", "Ünïcödé ÀÉÎÕÜ ąęłńśźż ŠŽČĆĐ", "हिन्दी भाषा", "ภาษาไทย", "עברית", "Հայերեն", "ქართული",
	"....!!!???", "a.b.c", "1.2.3", "1e10", "-0.0", "+42", "(555) 123-4567", "100%", "3/4", "½ + ¼ = ¾",
	"\t\t\t", "    ", " \n", "\n ", "\u3000\u3000", "\u00a0", "a\u200db", "zero\u200bwidth",
	"'s 's 'S", "don't won't can't shan't", "I'LL WE'VE THEY'RE HE'D", "O'Neil's", "rock 'n' roll",
}
