"""Drives the ragen kernel through jupyter_client, as Jupyter does.

Run by kernel_test.go (TestJupyterClient) with JUPYTER_PATH pointing at a
temporary kernelspec dir holding ragen-go. Prints one "ok NAME" line per
check and the benchmark numbers; exits 1 at the first failed check.
"""
import base64
import signal
import statistics
import sys
import time

from jupyter_client import KernelManager
from jupyter_client.session import Session

TIMEOUT = 20
TRAIN_TIMEOUT = 180


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def check(cond, name, detail=""):
    if not cond:
        fail(name + (": " + str(detail) if detail else ""))
    print("ok " + name, flush=True)


def shell_reply(kc, msg_id, timeout=TIMEOUT):
    while True:
        msg = kc.get_shell_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def iopub_until_idle(kc, msg_id, timeout=TIMEOUT):
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out
        out.append(msg)


def run(kc, code, timeout=TIMEOUT, **kw):
    msg_id = kc.execute(code, **kw)
    reply = shell_reply(kc, msg_id, timeout)
    return reply, iopub_until_idle(kc, msg_id, timeout)


def of_type(outputs, t):
    return [m for m in outputs if m["msg_type"] == t]


def result_text(outputs):
    res = of_type(outputs, "execute_result")
    return res[0]["content"]["data"]["text/plain"] if res else None


def main():
    t0 = time.perf_counter()
    km = KernelManager(kernel_name="ragen-go")
    km.start_kernel()
    try:
        checks(km, t0)
    finally:
        if km.is_alive():  # a failed check: do not leave the kernel behind
            km.shutdown_kernel(now=True)


def checks(km, t0):
    kc = km.client()
    kc.start_channels()
    # Requests sent before the kernel binds wait in the client's queue, so
    # one kernel_info measures start to first reply.
    shell_reply(kc, kc.kernel_info(), timeout=30)
    startup = time.perf_counter() - t0
    kc.wait_for_ready(timeout=30)  # and IOPub is connected

    # kernel_info
    msg_id = kc.kernel_info()
    info = shell_reply(kc, msg_id)["content"]
    li = info["language_info"]
    check(info["protocol_version"] == "5.3" and info["implementation"] == "ragen"
          and li["name"] == "go" and li["mimetype"] == "text/x-go" and li["file_extension"] == ".go"
          and li["codemirror_mode"] == "go" and li["pygments_lexer"] == "go", "kernel_info", info)
    busy = iopub_until_idle(kc, msg_id)
    check(any(m["msg_type"] == "status" and m["content"]["execution_state"] == "busy" for m in busy),
          "busy/idle around kernel_info")

    # state across cells, execute_result, execution counts
    r1, _ = run(kc, "x := 40")
    r2, out = run(kc, "x + 2")
    check(r1["content"]["status"] == "ok" and result_text(out) == "42", "state across cells", out)
    check(r2["content"]["execution_count"] == r1["content"]["execution_count"] + 1, "execution_count")
    check(of_type(out, "execute_input")[0]["content"]["code"] == "x + 2", "execute_input")

    # stream
    _, out = run(kc, 'import "fmt"\nfor i := 0; i < 3; i++ { fmt.Println("hello", i) }')
    text = "".join(m["content"]["text"] for m in of_type(out, "stream") if m["content"]["name"] == "stdout")
    check(text == "hello 0\nhello 1\nhello 2\n", "stream", text)

    # a large output arrives whole, in few messages (batched)
    reply, out = run(kc, 'for i := 0; i < 100000; i++ { fmt.Println(i) }')
    before = reply["content"]["execution_count"]
    streams = of_type(out, "stream")
    text = "".join(m["content"]["text"] for m in streams)
    check(text.count("\n") == 100000 and text.endswith("99999\n"), "100000 lines, nothing dropped",
          "%d lines" % text.count("\n"))
    check(len(streams) < 200, "output batched", "%d stream messages" % len(streams))

    # silent: runs, publishes nothing but status, does not count
    reply, out = run(kc, 'silentVar := 7\nfmt.Println("hidden")\nsilentVar', silent=True)
    check(reply["content"]["status"] == "ok" and not [m for m in out if m["msg_type"] != "status"],
          "silent execution", out)
    reply, out = run(kc, "silentVar")
    check(result_text(out) == "7" and reply["content"]["execution_count"] == before + 1, "silent does not count",
          reply["content"])

    # display_data with image/png, and update_display_data
    _, out = run(kc, '''import ("bytes"; "image"; "image/color"; "image/png"; "ragen/display")
img := image.NewRGBA(image.Rect(0, 0, 4, 4))
img.Set(1, 1, color.RGBA{255, 0, 0, 255})
var buf bytes.Buffer
png.Encode(&buf, img)
display.Display(display.PNG(buf.Bytes()))
h := display.NewHandle()
h.Show(display.Text("step 1"))
h.Update(display.Text("step 2"))''')
    dd = of_type(out, "display_data")
    check(len(dd) == 2 and base64.b64decode(dd[0]["content"]["data"]["image/png"])[:4] == b"\x89PNG"
          and "text/plain" in dd[0]["content"]["data"], "display_data image/png", out)
    upd = of_type(out, "update_display_data")
    check(len(upd) == 1 and upd[0]["content"]["transient"]["display_id"] == dd[1]["content"]["transient"]["display_id"]
          and upd[0]["content"]["data"]["text/plain"] == "step 2", "update_display_data", upd)

    # error reply with traceback
    reply, out = run(kc, 'var m map[string]int\nm["a"] = 1')
    c = reply["content"]
    check(c["status"] == "error" and c["ename"] == "panic" and c["evalue"] == "assignment to entry in nil map"
          and any("cell[" in line for line in c["traceback"]), "error reply", c)
    check(len(of_type(out, "error")) == 1, "error message on iopub")
    reply, _ = run(kc, "z := x + undefinedThing")
    check(reply["content"]["ename"] == "CompileError" and "undefined: undefinedThing" in reply["content"]["evalue"],
          "compile error", reply["content"])

    # the DSL is importable as "ragen"
    reply, out = run(kc, 'import "ragen"\nopt := ragen.MaxTurns(3)\nfmt.Sprint(opt)')
    check(reply["content"]["status"] == "ok" and result_text(out) is not None and "3" in result_text(out),
          "import \"ragen\"", reply["content"])

    # live training: one progress bar and one chart, shown then updated in
    # place (update_display_data), ending with the outcome, the summary and
    # the final chart; the run is in the variable afterwards
    reply, out = run(kc, '''tiny := ragen.Experiment{Env: ragen.Bandit(), Model: "tiny", Groups: 2, GroupSize: 2,
	TokensPerTurn: 160, Steps: 2, VocabSize: 300, NoValidation: true,
	WarmStart: ragen.WarmStart{Steps: 2, Episodes: 8, BatchSize: 4}}
run := tiny.Train()''', timeout=TRAIN_TIMEOUT)
    check(reply["content"]["status"] == "ok", "training cell", reply["content"])
    shown = of_type(out, "display_data")
    updates = of_type(out, "update_display_data")
    check(len(shown) == 2 and all(d["content"]["transient"]["display_id"] for d in shown),
          "training shows two displays (bar, chart)", [m["content"]["data"].keys() for m in shown])
    bar_id = shown[0]["content"]["transient"]["display_id"]
    chart_id = shown[1]["content"]["transient"]["display_id"]
    check("text/html" in shown[0]["content"]["data"] and "<progress" in shown[0]["content"]["data"]["text/html"],
          "progress bar is HTML", shown[0]["content"]["data"])
    check(base64.b64decode(shown[1]["content"]["data"]["image/png"])[:4] == b"\x89PNG", "live chart is a PNG")
    bar_updates = [u for u in updates if u["content"]["transient"]["display_id"] == bar_id]
    chart_updates = [u for u in updates if u["content"]["transient"]["display_id"] == chart_id]
    check(len(bar_updates) >= 1 and len(chart_updates) >= 1 and len(updates) == len(bar_updates) + len(chart_updates),
          "update_display_data during training", [u["content"]["transient"] for u in updates])
    final = bar_updates[-1]["content"]["data"]
    # The summary table is the run's own display (a cell ending with `run`):
    # in the bar too, it showed twice.
    check("done, 2 steps" in final["text/plain"] and "rollout/reward_mean" not in final["text/plain"]
          and "<table" not in final["text/html"], "final bar: outcome, no summary table", final["text/plain"])
    check("image/png" in chart_updates[-1]["content"]["data"], "final chart")
    _, out = run(kc, "run.Steps()")
    check(result_text(out) == "2", "run holds its steps", out)

    # interrupt during a training cell: training stops at the next safe
    # point, the cell is reported interrupted, the kernel survives, and the
    # run returned by TrainContext holds the metrics so far with the error
    msg_id = kc.execute('''import "ragen/cellctx"
long := tiny
long.Steps = 500
run2, err2 := long.TrainContext(cellctx.Context())''')
    seen = []
    while True:  # wait for the first chart: step 1 is done
        msg = kc.get_iopub_msg(timeout=TRAIN_TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            fail("training cell ended before it was interrupted: %s" % [m["msg_type"] for m in seen])
        if msg["msg_type"] in ("display_data", "update_display_data") and "image/png" in msg["content"]["data"]:
            break
    t = time.perf_counter()
    km.interrupt_kernel()
    c = shell_reply(kc, msg_id, timeout=TRAIN_TIMEOUT)["content"]
    check(c["status"] == "error" and c["ename"] == "Interrupted", "interrupt during training", c)
    print("training interrupt took %.2f s" % (time.perf_counter() - t), flush=True)
    seen += iopub_until_idle(kc, msg_id)
    bars = [m["content"]["data"]["text/plain"] for m in seen if m["msg_type"] == "update_display_data"
            and "image/png" not in m["content"]["data"]]
    check(bars and "interrupted at step" in bars[-1], "bar says where the run was interrupted", bars[-1:])
    _, out = run(kc, 'import ("context"; "errors")\nfmt.Sprint(run2.Steps() > 0, run2.Steps() < 500, errors.Is(err2, context.Canceled))')
    check("true true true" in (result_text(out) or ""), "interrupted run holds the metrics so far and the error", out)

    # complete and inspect
    msg_id = kc.complete("strings.Rep", 11)
    c = shell_reply(kc, msg_id)["content"]
    check(c["status"] == "ok" and "Repeat" in c["matches"] and c["cursor_start"] == 8 and c["cursor_end"] == 11,
          "complete", c)
    iopub_until_idle(kc, msg_id)
    msg_id = kc.inspect("strings.Repeat", 14)
    c = shell_reply(kc, msg_id)["content"]
    check(c["found"] and "func strings.Repeat" in c["data"]["text/plain"], "inspect", c)
    iopub_until_idle(kc, msg_id)
    msg_id = kc.is_complete("func f() {")
    c = shell_reply(kc, msg_id)["content"]
    check(c["status"] == "incomplete", "is_complete", c)
    iopub_until_idle(kc, msg_id)
    msg_id = kc.history(hist_access_type="tail", n=2)
    c = shell_reply(kc, msg_id)["content"]
    check(c["status"] == "ok" and len(c["history"]) == 2, "history", c)
    iopub_until_idle(kc, msg_id)
    msg_id = kc.comm_info()
    c = shell_reply(kc, msg_id)["content"]
    check(c["status"] == "ok" and c["comms"] == {}, "comm_info", c)
    iopub_until_idle(kc, msg_id)

    # stop_on_error: a request queued behind a failing cell is aborted
    bad = kc.execute('panic("stop here")')
    queued = kc.execute("abortedVar := 1")
    check(shell_reply(kc, bad)["content"]["status"] == "error", "failing cell")
    check(shell_reply(kc, queued)["content"]["status"] == "aborted", "queued cell aborted")
    idle = set()
    while len(idle) < 2:  # both requests end with idle, in order
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle.add(msg["parent_header"].get("msg_id"))
    check(idle == {bad, queued}, "busy/idle around the aborted request", idle)

    # interrupt during a long-running cell
    msg_id = kc.execute("n := 0\nfor { n++ }")
    time.sleep(0.5)
    t = time.perf_counter()
    km.interrupt_kernel()
    c = shell_reply(kc, msg_id)["content"]
    check(c["status"] == "error" and c["ename"] == "Interrupted", "interrupt", c)
    print("interrupt took %.2f s" % (time.perf_counter() - t), flush=True)
    iopub_until_idle(kc, msg_id)
    _, out = run(kc, "x + n*0")
    check(result_text(out) == "40", "kernel survives interrupt", out)
    # SIGINT (what a client in signal mode or Ctrl-C sends) interrupts too
    msg_id = kc.execute("for { n++ }")
    time.sleep(0.3)
    km.signal_kernel(signal.SIGINT)
    c = shell_reply(kc, msg_id)["content"]
    check(c["status"] == "error" and c["ename"] == "Interrupted", "SIGINT interrupts", c)
    iopub_until_idle(kc, msg_id)

    # a mis-signed message is ignored: not executed, no reply
    wrong = Session(key=b"not-the-key", username="intruder")
    wrong.send(kc.shell_channel.socket, "execute_request",
               {"code": "intruded := 1", "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    time.sleep(0.3)
    reply, _ = run(kc, "intruded")
    check(reply["content"]["status"] == "error" and "undefined: intruded" in reply["content"]["evalue"],
          "mis-signed message ignored", reply["content"])

    # benchmark: round trip of a trivial execute_request (reply and idle)
    times = []
    for i in range(200):
        t = time.perf_counter()
        run(kc, "v := 1", store_history=False)
        times.append(time.perf_counter() - t)
    stmt_ms = statistics.median(times) * 1e3
    times = []
    for i in range(50):
        t = time.perf_counter()
        run(kc, "x", store_history=False)
        times.append(time.perf_counter() - t)
    expr_ms = statistics.median(times) * 1e3

    # restart: state is gone, kernel answers
    t = time.perf_counter()
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=30)
    restart = time.perf_counter() - t
    _, out = run(kc, "x")
    check(of_type(out, "error") and "undefined: x" in of_type(out, "error")[0]["content"]["evalue"],
          "restart clears state", out)
    _, out = run(kc, "1 + 1")
    check(result_text(out) == "2", "restarted kernel runs cells")

    # shutdown: the kernel exits by itself, without being killed
    t = time.perf_counter()
    kc.stop_channels()
    km.shutdown_kernel(now=False)
    took = time.perf_counter() - t
    check(not km.is_alive() and took < 4.5, "shutdown", "%.2f s" % took)

    print("BENCH startup_to_kernel_info_ms %.1f" % (startup * 1e3))
    print("BENCH execute_roundtrip_median_ms %.2f (200 x 'v := 1')" % stmt_ms)
    print("BENCH execute_roundtrip_expr_median_ms %.2f (50 x 'x', with execute_result)" % expr_ms)
    print("BENCH restart_ms %.1f" % (restart * 1e3))
    print("PASS")


if __name__ == "__main__":
    main()
