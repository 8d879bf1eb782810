package mcp

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonFields lists the JSON arguments a struct binds, with whether each is
// required (no omitempty), following embedded structs as encoding/json does.
func jsonFields(t *testing.T, typ reflect.Type, out map[string]bool) {
	t.Helper()
	for f := range typ.Fields() {
		tag, ok := f.Tag.Lookup("json")
		if f.Anonymous && !ok {
			jsonFields(t, f.Type, out)
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			t.Errorf("%s.%s has no json name", typ, f.Name)
			continue
		}
		out[name] = !slices.Contains(strings.Split(opts, ","), "omitempty")
	}
}

// TestArgumentsMatchSchemas holds every tool's argument struct to its
// declared input schema: each bound field is a schema property and each
// property is bound, and a property is required exactly when its field is
// not omitempty. A renamed field or a forgotten declaration fails here.
func TestArgumentsMatchSchemas(t *testing.T) {
	t.Parallel()
	all := newTools(nil, Options{}).all()
	if len(all) != len(listToolsJSON(t)) {
		t.Fatalf("%d tools declared, tools/list has %d", len(all), len(listToolsJSON(t)))
	}
	for _, tl := range all {
		fields := map[string]bool{}
		jsonFields(t, tl.args, fields)
		for name, required := range fields {
			if _, ok := tl.InputSchema.Properties[name]; !ok {
				t.Errorf("%s: argument %q (%s) is not in the input schema", tl.Name, name, tl.args)
				continue
			}
			if inSchema := slices.Contains(tl.InputSchema.Required, name); inSchema != required {
				t.Errorf("%s: argument %q required in schema = %v, but its field says %v (omitempty marks optional)",
					tl.Name, name, inSchema, required)
			}
		}
		for name := range tl.InputSchema.Properties {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s: schema property %q is not bound by %s", tl.Name, name, tl.args)
			}
		}
		for _, name := range tl.InputSchema.Required {
			if _, ok := tl.InputSchema.Properties[name]; !ok {
				t.Errorf("%s: required %q is not a property", tl.Name, name)
			}
		}
	}
}
