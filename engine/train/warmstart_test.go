package train

import "testing"

// TestWarmStartKeyResolvesOptions: spelling out a default option does not
// change the warm start's cache key; changing a value does.
func TestWarmStartKeyResolvesOptions(t *testing.T) {
	key := func(opts map[string]any) string {
		c := Default()
		c.Env, c.EnvOptions = "frozenlake", opts
		k, err := warmStartKey(&c)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	implicit := key(map[string]any{"is_slippery": false})
	if explicit := key(map[string]any{"is_slippery": false, "size": 4}); explicit != implicit {
		t.Errorf("size 4 spelled out changed the key: %s vs %s", explicit, implicit)
	}
	if other := key(map[string]any{"is_slippery": false, "size": 5}); other == implicit {
		t.Error("size 5 gave the key of size 4")
	}
}
