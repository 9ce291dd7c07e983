package tokenizer_test

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/tokenizer"
)

func Example() {
	corpus := []string{
		"<think>The box is left of the target</think><answer>Right</answer>",
		"<think>The box is above the target</think><answer>Down</answer>",
		"<think>Push the box right</think><answer>Right || Right</answer>",
	}
	tok, err := tokenizer.Train(corpus, tokenizer.TrainConfig{VocabSize: 300})
	if err != nil {
		panic(err)
	}
	ids := tok.Encode("<think>The box</think><answer>Right</answer>")
	for _, id := range ids {
		fmt.Printf("%d %q\n", id, tok.Token(id))
	}
	text, _ := tok.Decode(ids)
	fmt.Println(text)
	// Output:
	// 3 "<think>"
	// 280 "The"
	// 270 "Ġbox"
	// 4 "</think>"
	// 5 "<answer>"
	// 272 "Right"
	// 6 "</answer>"
	// <think>The box</think><answer>Right</answer>
}
