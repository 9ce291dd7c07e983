package algo

import (
	"math"
	"reflect"
	"testing"
)

// Five groups of two, interleaved in the batch, worked by hand:
//
//	group   returns   unbiased std
//	0       0, 1      √½ = 0.70711
//	1       1, 3      √2 = 1.41421
//	2       2, 2      0
//	3       0, 0      0
//	4       0, 4      √8 = 2.82843
//
// By std, ties to the lower id: 2, 3, 0, 1, 4.
func TestRewardStdBucketsByHand(t *testing.T) {
	group := []int{3, 1, 0, 2, 4, 3, 1, 0, 2, 4}
	returns := []float64{0, 1, 0, 2, 0, 0, 3, 1, 2, 4}
	r2, r8 := math.Sqrt(0.5), math.Sqrt(8)

	type want struct {
		name    string
		members []int
		groups  []int
	}
	check := func(label string, got []Bucket, wants []want) {
		t.Helper()
		if len(got) != len(wants) {
			t.Fatalf("%s: %d buckets, want %d: %+v", label, len(got), len(wants), got)
		}
		for k, w := range wants {
			b := got[k]
			if b.Name != w.name || !reflect.DeepEqual(b.Members, w.members) || !reflect.DeepEqual(b.Groups, w.groups) {
				t.Errorf("%s: bucket %d = %s %v groups %v, want %s %v groups %v", label, k, b.Name, b.Members, b.Groups, w.name, w.members, w.groups)
			}
		}
	}
	all := want{"all", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []int{0, 1, 2, 3, 4}}

	// Two buckets: ⌊5/2⌋ = 2 groups, the remainder to the last.
	b, err := RewardStdBuckets(returns, group, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	check("quantile 2", b, []want{all,
		{"bucket_1", []int{0, 3, 5, 8}, []int{2, 3}},
		{"bucket_2", []int{1, 2, 4, 6, 7, 9}, []int{0, 1, 4}},
	})
	if got, w := b[2].StdMean(), (r2+math.Sqrt2+r8)/3; math.Abs(got-w) > 1e-12 {
		t.Errorf("bucket_2 std mean %v, want %v", got, w)
	}
	if !reflect.DeepEqual(b[2].Std, []float64{r2, math.Sqrt2, r8}) {
		t.Errorf("bucket_2 std %v", b[2].Std)
	}

	// Six asked, five groups: five buckets of one.
	b, err = RewardStdBuckets(returns, group, DefaultBuckets, BucketQuantile)
	if err != nil {
		t.Fatal(err)
	}
	check("quantile 6", b, []want{all,
		{"bucket_1", []int{3, 8}, []int{2}},
		{"bucket_2", []int{0, 5}, []int{3}},
		{"bucket_3", []int{2, 7}, []int{0}},
		{"bucket_4", []int{1, 6}, []int{1}},
		{"bucket_5", []int{4, 9}, []int{4}},
	})

	// Fixed intervals: [0,1) holds 0, 2, 3; [1,2) 1; [2,3) 4; the empty
	// ones are left out.
	b, err = RewardStdBuckets(returns, group, 0, BucketFixedRV)
	if err != nil {
		t.Fatal(err)
	}
	check("fixed_rv", b, []want{all,
		{"bucket_1", []int{0, 2, 3, 5, 7, 8}, []int{0, 2, 3}},
		{"bucket_2", []int{1, 6}, []int{1}},
		{"bucket_3", []int{4, 9}, []int{4}},
	})

	for _, c := range []struct {
		count int
		mode  string
		msg   string
	}{
		{0, "", "gradient_report_buckets: must be > 0 (got 0)"},
		{2, "equal", `gradient_report_bucket_mode: must be quantile or fixed_rv (got "equal")`},
	} {
		if _, err := RewardStdBuckets(returns, group, c.count, c.mode); err == nil || err.Error() != c.msg {
			t.Errorf("count %d mode %q: error %v, want %q", c.count, c.mode, err, c.msg)
		}
	}
}
