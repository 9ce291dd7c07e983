// Package knob derives command-line flags from a documented config struct,
// the way CleanRL's tyro.cli(Args) does: the struct is the one place a knob
// is named, documented and defaulted, and its tags say how the command line
// spells it.
//
//		EnvGroups int `json:"env_groups" flag:"groups" help:"environment groups per step" group:"rollouts"`
//
//	  - flag is the flag's name; on a struct field it is the prefix of its
//	    fields' flags ("sft" + "steps" = -sft-steps; flag:"" adds none), and
//	    flag:"-" leaves the field off the command line.
//	  - help is the flag's one line of usage text; the default is shown from
//	    the value bound, not written here.
//	  - group starts a section of the usage text; on a struct field it names
//	    the section of all its fields.
//
// A field's Key is its path of JSON names ("warm_start.steps"), the name the
// config's validation errors use; Path is its path of Go names
// ("WarmStart.Steps").
//
// Supported leaf types: string, bool, int, int64, float32, float64,
// []string (comma-separated) and *float64 (nil until set). A pointer to a
// struct on the way to a field (LoRA *model.LoRA) is allocated when one of
// its flags is set.
package knob

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// A Field is one knob of a config struct as its tags name it.
type Field struct {
	Key   string // JSON path: "warm_start.steps" (a json:"-" field by its Go name, lowercased)
	Path  string // Go path: "WarmStart.Steps"
	Flag  string // flag name without the dash: "sft-steps"; "" if the field has none
	Help  string // one line of usage text
	Group string // usage section
	Type  reflect.Type
	index []int
}

// Fields lists the leaf fields of the struct type t (a struct or a pointer
// to one) in declaration order, nested structs flattened. Fields without a
// flag tag, and those tagged flag:"-", are listed with Flag "".
func Fields(t reflect.Type) []Field {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Field
	walk(t, nil, "", "", "", "", &out)
	return out
}

func walk(t reflect.Type, index []int, key, path, prefix, group string, out *[]Field) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		idx := append(append([]int{}, index...), i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = strings.ToLower(sf.Name)
		}
		k, p := join(key, name, "."), join(path, sf.Name, ".")
		fl, hasFlag := sf.Tag.Lookup("flag")
		g := group
		if tg, ok := sf.Tag.Lookup("group"); ok {
			g = tg
		}
		st := sf.Type
		if st.Kind() == reflect.Pointer && st.Elem().Kind() == reflect.Struct {
			st = st.Elem()
		}
		if st.Kind() == reflect.Struct && fl != "-" {
			pre := prefix
			if fl != "" {
				pre = join(prefix, fl, "-")
			}
			walk(st, idx, k, p, pre, g, out) // a struct's group is its fields' alone
			continue
		}
		group = g // a leaf's group goes on to the fields after it
		f := Field{Key: k, Path: p, Help: sf.Tag.Get("help"), Group: group, Type: sf.Type, index: idx}
		if hasFlag && fl != "-" {
			f.Flag = join(prefix, fl, "-")
		}
		*out = append(*out, f)
	}
}

func join(a, b, sep string) string {
	if a == "" {
		return b
	}
	return a + sep + b
}

// Value is the field in the struct *cfg points to, settable. With alloc, a
// nil struct pointer on the way is allocated; without, a nil one gives the
// invalid Value.
func (f Field) Value(cfg any, alloc bool) reflect.Value {
	v := reflect.ValueOf(cfg).Elem()
	for i, x := range f.index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !alloc {
					return reflect.Value{}
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// Supported reports whether the binder can parse the field's type.
func (f Field) Supported() bool {
	switch f.Type.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Slice:
		return f.Type.Elem().Kind() == reflect.String
	case reflect.Pointer:
		return f.Type.Elem().Kind() == reflect.Float64
	}
	return false
}

// value is a flag.Value writing one field of a config.
type value struct {
	f   Field
	cfg any // pointer to the struct
}

func (v *value) String() string {
	if v == nil || v.cfg == nil {
		return ""
	}
	return format(v.f.Value(v.cfg, false))
}

func (v *value) Set(s string) error {
	x := v.f.Value(v.cfg, true)
	switch x.Kind() {
	case reflect.String:
		x.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		x.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 0, x.Type().Bits())
		if err != nil {
			return numError(err)
		}
		x.SetInt(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, 64) // float32 fields round once from float64, as float32(x) does in the DSL
		if err != nil {
			return numError(err)
		}
		x.SetFloat(n)
	case reflect.Slice:
		x.Set(reflect.ValueOf(strings.Split(s, ",")))
	case reflect.Pointer:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return numError(err)
		}
		x.Set(reflect.ValueOf(&n))
	default:
		return fmt.Errorf("knob: unsupported type %s of %s", x.Type(), v.f.Path)
	}
	return nil
}

func (v *value) IsBoolFlag() bool { return v.f.Type.Kind() == reflect.Bool }

// numError drops strconv's wrapping, which the flag package repeats.
func numError(err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	return err
}

// format writes a field's value as its flag would be given.
func format(x reflect.Value) string {
	if !x.IsValid() {
		return ""
	}
	switch x.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(x.Float(), 'g', -1, x.Type().Bits())
	case reflect.Slice:
		return strings.Join(x.Interface().([]string), ",")
	case reflect.Pointer:
		if x.IsNil() {
			return ""
		}
		return format(x.Elem())
	}
	return fmt.Sprint(x.Interface())
}

// Bind defines a flag on fs for every field of *cfg with a flag name, its
// default the field's value now. It returns the fields bound, in order.
// A field of a type the binder cannot parse panics: a programming error
// that the config's tests catch.
func Bind(fs *flag.FlagSet, cfg any) []Field {
	var bound []Field
	for _, f := range Fields(reflect.TypeOf(cfg)) {
		if f.Flag == "" {
			continue
		}
		if !f.Supported() {
			panic(fmt.Sprintf("knob: %s: unsupported type %s", f.Path, f.Type))
		}
		fs.Var(&value{f, cfg}, f.Flag, f.Help)
		bound = append(bound, f)
	}
	return bound
}

// Reapply copies the fields behind the flags set on fs from *from to *to
// (both of the bound struct's type): flags given on the command line win
// over a preset chosen after parsing.
func Reapply(fs *flag.FlagSet, bound []Field, from, to any) {
	byFlag := map[string]Field{}
	for _, f := range bound {
		byFlag[f.Flag] = f
	}
	fs.Visit(func(fl *flag.Flag) {
		if f, ok := byFlag[fl.Name]; ok {
			if src := f.Value(from, false); src.IsValid() {
				f.Value(to, true).Set(src)
			}
		}
	})
}

// Section is a titled group of flags in a usage text.
type Section struct {
	Title string
	Flags []string
}

// Sections groups the bound fields by their group tag, in order of first
// appearance.
func Sections(bound []Field) []Section {
	var out []Section
	at := map[string]int{}
	for _, f := range bound {
		i, ok := at[f.Group]
		if !ok {
			i = len(out)
			at[f.Group] = i
			out = append(out, Section{Title: f.Group})
		}
		out[i].Flags = append(out[i].Flags, f.Flag)
	}
	return out
}

// PrintSections writes the flags of fs section by section, in the flag
// package's layout: "-name type" then the help indented, with the default
// when it is not the type's zero value.
func PrintSections(w io.Writer, fs *flag.FlagSet, sections []Section) {
	for _, s := range sections {
		fmt.Fprintf(w, "\n%s:\n", s.Title)
		for _, name := range s.Flags {
			fl := fs.Lookup(name)
			if fl == nil {
				continue
			}
			typ, usage := flag.UnquoteUsage(fl)
			if v, ok := fl.Value.(*value); ok {
				typ = typeName(v.f.Type)
			}
			line := "  -" + fl.Name
			if typ != "" {
				line += " " + typ
			}
			fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
			if d := fl.DefValue; d != "" && d != "0" && d != "false" {
				fmt.Fprintf(w, " (default %s)", d)
			}
			fmt.Fprintln(w)
		}
	}
}

// typeName is the word after a flag's name in the usage text.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return ""
	case reflect.Int, reflect.Int64:
		return "int"
	case reflect.Float32, reflect.Float64, reflect.Pointer:
		return "float"
	case reflect.Slice:
		return "list"
	}
	return "string"
}
