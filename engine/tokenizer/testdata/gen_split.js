// gen_split.js writes split_golden.json: the pre-tokens that JavaScript's
// regex engine (backtracking, leftmost-first, with lookahead, like
// Oniguruma in Hugging Face tokenizers) gives for the gpt2, qwen2 and llama3
// patterns on hand-picked and random strings. TestSplitMatchesRegex checks
// our hand-written scanners against it.
//
// Regenerate (Node.js ≥ 18):  node engine/tokenizer/testdata/gen_split.js > engine/tokenizer/testdata/split_golden.json
//
// Node 20 lacks the (?i:...) group, so the case-insensitive contractions are
// spelled out with character classes; the inputs avoid U+017F (ſ), U+0085
// and U+FEFF, where JavaScript's case folding or \s differ from Oniguruma's.
"use strict";

const contractionsCI = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const patterns = {
  gpt2: String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
  qwen2: contractionsCI + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  llama3: contractionsCI + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
};

const fixed = [
  "", "a", " ", "  ", "hello world", "Hello  World", "a   b", "a \t b", "x  ", "  leading",
  "I'm here", "you'RE", "DON'T", "she'LL", "it's", "'s'", "''s", "'hello", "I'D", "we've", "they'Ve",
  "12345 67", "x2y", "3.14159", "year 2024!", "1,000,000", "Ⅻ ½ ١٢٣",
  "a\n\nb", "  \n  x", "\n", " \n ", "\r\n", "foo!!\n\nbar", "end.\n", "line1\nline2\r\nline3",
  "hello, world", "héllo wörld", "e\u0301te\u0301", "日本語のテキスト、です。", "emoji 😀👍🏽 ok", "مرحبا بالعالم",
  "a\u00a0b", "\u3000x", "x\u2003 y", "tab\tsep\tvalues", "\t\tindent",
  "#_X_P#\n#__O_#\n#####", "<think>The box is left of the target</think><answer>Right || Up</answer>",
  "func main() {\n\tfmt.Println(\"hi\")\n}\n", "  // comment\n    return x+1;", "$$$ ?? !!", " !x", "a!b", "(hello)", "_start",
];

// A fixed-seed generator (mulberry32) for random strings over an alphabet
// of the characters whose classes matter.
let seed = 12345;
function rand() {
  seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const alphabet = ["a", "B", "s", "t", "e", "L", "1", "2", " ", " ", "\n", "\r", "\t", "'", "!", ".", "_", "é", "日",
  "\u00a0", "\u3000", "½", "\u0301", "😀", "#", "<", ">"];
const inputs = fixed.slice();
for (let i = 0; i < 300; i++) {
  const n = 1 + Math.floor(rand() * 16);
  let s = "";
  for (let j = 0; j < n; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
  inputs.push(s);
}

const out = [];
for (const [name, src] of Object.entries(patterns)) {
  const re = new RegExp(src, "gu");
  for (const input of inputs) {
    const pieces = [];
    let last = 0;
    for (const m of input.matchAll(re)) {
      if (m.index > last) pieces.push(input.slice(last, m.index)); // Isolated keeps gaps
      pieces.push(m[0]);
      last = m.index + m[0].length;
    }
    if (last < input.length) pieces.push(input.slice(last));
    if (pieces.join("") !== input) throw new Error("pieces do not rebuild " + JSON.stringify(input));
    out.push({ pattern: name, input, pieces });
  }
}
process.stdout.write("[\n" + out.map((o) => JSON.stringify(o)).join(",\n") + "\n]\n");
