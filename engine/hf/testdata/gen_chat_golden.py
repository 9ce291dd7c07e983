"""gen_chat_golden.py renders conversations with tool and developer turns
through Qwen2.5's and Qwen3's chat templates (qwen2.5_chat_template.jinja,
qwen3_chat_template.jinja) and the one hf.Save writes (chatml_template.jinja)
with Python's Jinja2, set up as transformers' apply_chat_template sets it up
(a sandbox, trim_blocks, lstrip_blocks), and writes chat_golden_jinja2.json
for TestChatTemplateJinja2Golden. gen_chat_golden.js makes chat_golden.json,
the conversations without tools, with transformers.js, which cannot parse
Qwen3's template; this script can. Regenerate (Debian: apt-get install
python3-jinja2):

    cd engine/hf/testdata && python3 gen_chat_golden.py
"""
import json

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
templates = {}
for name, path in [("qwen2.5", "qwen2.5_chat_template.jinja"), ("qwen3", "qwen3_chat_template.jinja"),
                   ("chatml", "chatml_template.jinja")]:
    with open(path, encoding="utf-8") as f:
        templates[name] = env.from_string(f.read())


def m(role, content):
    return {"role": role, "content": content}


TR = "<tool_response>\n{\"temperature\": 21}\n</tool_response>"
convs = [
    # The conversations of chat_golden.json, now through Qwen3's template too.
    [m("user", "hi")],
    [m("system", "You are a Sokoban solver."), m("user", "Turn 1:\n#_X_P#\n")],
    [m("user", "State:\nP__\n"), m("assistant", "<think>go right</think><answer>Right</answer>"),
     m("user", "Reward: 1\nState:\n_P_\n")],
    [m("system", "S"), m("user", "a"), m("assistant", "b"), m("system", "mid-conversation note"),
     m("user", "c"), m("assistant", "d")],
    # tool: consecutive ones share one user turn, each in <tool_response>.
    [m("user", "weather?"), m("assistant", "<tool_call>\n{\"name\": \"w\"}\n</tool_call>"), m("tool", "{\"temperature\": 21}")],
    [m("system", "S"), m("user", "a"), m("assistant", "<think>call two</think>calling"), m("tool", "r1"), m("tool", "r2"),
     m("assistant", "<think>both in</think>done")],
    [m("tool", "first"), m("user", "b"), m("tool", "last")],
    [m("user", "a"), m("tool", "x"), m("assistant", "y"), m("tool", "z"), m("user", "q")],
    [m("user", "a"), m("tool", "x"), m("developer", "between"), m("tool", "z")],
    # developer: no template branch renders it.
    [m("developer", "be brief"), m("user", "hi")],
    [m("system", "S"), m("developer", "be brief"), m("user", "a"), m("assistant", "<think>t</think>b"), m("developer", "d2")],
    # A user turn that is a tool response is no query for Qwen3: the
    # reasoning after the last real user turn is kept.
    [m("user", "a"), m("assistant", "<think>p</think>x"), m("user", TR), m("assistant", "<think>q</think>y")],
    [m("user", TR), m("assistant", "<think>t</think>a")],
    [m("user", TR), m("assistant", "<think>t</think>a"), m("user", TR)],
    [m("user", "a"), m("assistant", "<think>p</think>x"), m("user", TR + " and more"), m("assistant", "<think>q</think>y")],
    [m("user", "a"), m("assistant", "<think>p</think>x"), m("tool", "r"), m("user", TR), m("assistant", "<think>q</think>y")],
]
# The setup renders chat_golden.json (transformers.js) as it is.
with open("chat_golden.json", encoding="utf-8") as f:
    for c in json.load(f):
        for name in ("qwen2.5", "chatml"):
            text = templates[name].render(messages=c["messages"], add_generation_prompt=c["add_generation_prompt"])
            if text != c["text"]:
                raise SystemExit(f"{name} renders {c['messages']} as {text!r}, transformers.js as {c['text']!r}")

out = []
for messages in convs:
    for gen in (True, False):
        for name, t in templates.items():
            text = t.render(messages=messages, add_generation_prompt=gen)
            out.append({"template": name, "messages": messages, "add_generation_prompt": gen, "text": text})
with open("chat_golden_jinja2.json", "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
