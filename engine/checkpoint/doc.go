// Package checkpoint saves and loads model state: safetensors files (read
// and written by our own code) and checkpoint directories in the Hugging
// Face layout — model.safetensors, config.json, tokenizer.json, and for
// resuming training optimizer.safetensors and trainer_state.json.
//
// Safetensors format (github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON
//
//	{"__metadata__": {"k": "v", ...},
//	 "name": {"dtype": "F32", "shape": [4, 8], "data_offsets": [begin, end]}, ...}
//
// padded with spaces to a multiple of 8 bytes, then the data: each tensor
// row-major, little-endian, at [begin, end) from the start of the data. The
// reader checks everything the reference implementation checks — header
// inside the file and at most 100 MB, valid JSON with known dtypes, offsets
// that match shape × dtype size, tensors that tile the data exactly (no gap,
// no overlap, nothing missing or extra) — and more: a tensor name that
// appears twice in the header is an error (a JSON map would keep the last),
// and Load, what a model calls for each parameter, refuses NaN and infinite
// values. Every error names the file, the tensor and the problem. Writes are F32, tensors in name order as HF
// does; reads convert F32, F16 and BF16 to float32 (exactly: every F16 and
// BF16 value is a float32).
//
// A File reads each tensor straight into the caller's buffer (ReadInto), in
// chunks through an io.ReaderAt, so loading never holds a second full copy
// of the weights; a memory-mapped file or a set of shards is another source
// behind the same methods.
//
// Every file is written atomically (a temporary file in the same folder,
// fsync, rename, fsync of the folder), and SaveDir makes a whole checkpoint
// directory appear at once: it writes into a sibling DIR.tmp-*, then renames
// it into place. A crash at any point leaves either the old checkpoint or
// the new one, never a half-written one under DIR.
package checkpoint
