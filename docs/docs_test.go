package docs

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated part of tools.md from the golden tool schemas")

const (
	schemasDir = "../mcp/testdata/tools"
	toolsDoc   = "tools.md"
	beginMark  = "<!-- BEGIN GENERATED: go test ./docs -update writes from here to END; do not edit -->"
	endMark    = "<!-- END GENERATED -->"
)

// groups orders the reference by who calls a tool. A tool missing here is
// still documented, under "Other tools", so a new tool never vanishes from it.
var groups = []struct {
	title string
	tools []string
}{
	{"Accounts and sign-in", []string{"register_organization", "register_user", "login", "logout", "whoami", "change_password"}},
	{"People", []string{"list_users", "get_user_profile", "update_my_notes"}},
	{"Questions and answers", []string{"ask_person", "check_inbox", "propose_response", "send_response", "check_replies"}},
	{"Conversations, search and routing", []string{"get_thread", "search_answers", "find_owner"}},
	{"Waiting", []string{"wait_for_messages"}},
	{"Administration (admin password)", []string{"update_user_profile_notes", "reset_user_password", "deactivate_user", "reactivate_user",
		"delete_organization"}},
}

// tool is the part of a golden schema file (one tools/list entry) the reference shows.
type tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Annotations struct {
		Title           string `json:"title"`
		ReadOnlyHint    *bool  `json:"readOnlyHint"`
		DestructiveHint *bool  `json:"destructiveHint"`
		IdempotentHint  *bool  `json:"idempotentHint"`
		OpenWorldHint   *bool  `json:"openWorldHint"`
	} `json:"annotations"`
	InputSchema struct {
		Properties map[string]property `json:"properties"`
		Required   []string            `json:"required"`
	} `json:"inputSchema"`
}

type property struct {
	Type        string    `json:"type"`
	Description string    `json:"description"`
	MinLength   *int      `json:"minLength"`
	MaxLength   *int      `json:"maxLength"`
	Minimum     *float64  `json:"minimum"`
	Maximum     *float64  `json:"maximum"`
	Default     any       `json:"default"`
	Enum        []any     `json:"enum"`
	Items       *property `json:"items"`
}

// TestToolsDoc fails when the generated part of tools.md differs from what the
// golden schemas give; with -update it rewrites that part.
func TestToolsDoc(t *testing.T) {
	tools := readTools(t)
	current, err := os.ReadFile(toolsDoc)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(current), beginMark)
	_, tail, ok2 := strings.Cut(rest, endMark)
	if !ok || !ok2 {
		t.Fatalf("%s must contain the lines %q and %q", toolsDoc, beginMark, endMark)
	}
	want := head + beginMark + "\n" + render(tools) + endMark + tail
	if want == string(current) {
		return
	}
	if *update {
		if err := os.WriteFile(toolsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/%s does not match mcp/testdata/tools: run 'go test ./docs -update' and commit it", toolsDoc)
}

func readTools(t *testing.T) map[string]tool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(schemasDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden schemas in %s (err %v)", schemasDir, err)
	}
	tools := map[string]tool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tl tool
		if err := json.Unmarshal(b, &tl); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if tl.Name == "" {
			t.Fatalf("%s: no tool name", f)
		}
		tools[tl.Name] = tl
	}
	return tools
}

// render writes the summary table and one section per tool, in group order.
func render(tools map[string]tool) string {
	type section struct {
		title string
		tools []tool
	}
	var sections []section
	seen := map[string]bool{}
	for _, g := range groups {
		s := section{title: g.title}
		for _, name := range g.tools {
			if tl, ok := tools[name]; ok {
				s.tools = append(s.tools, tl)
				seen[name] = true
			}
		}
		sections = append(sections, s)
	}
	other := section{title: "Other tools"}
	for _, name := range sortedKeys(tools) {
		if !seen[name] {
			other.tools = append(other.tools, tools[name])
		}
	}
	sections = append(sections, other)

	var b strings.Builder
	b.WriteString("\n| tool | arguments (required in bold) | read-only | what it does |\n|---|---|---|---|\n")
	for _, s := range sections {
		for _, tl := range s.tools {
			var args []string
			for _, name := range argOrder(tl) {
				if isRequired(tl, name) {
					args = append(args, "**`"+name+"`**")
				} else {
					args = append(args, "`"+name+"`")
				}
			}
			fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n", tl.Name, tl.Name, strings.Join(args, ", "),
				yesNo(tl.Annotations.ReadOnlyHint), cell(tl.Annotations.Title))
		}
	}
	for _, s := range sections {
		if len(s.tools) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n", s.title)
		for _, tl := range s.tools {
			renderTool(&b, tl)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func renderTool(b *strings.Builder, tl tool) {
	fmt.Fprintf(b, "\n#### %s\n\n", tl.Name)
	if tl.Annotations.Title != "" {
		fmt.Fprintf(b, "**%s.** ", tl.Annotations.Title)
	}
	fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(tl.Description))
	if len(tl.InputSchema.Properties) == 0 {
		b.WriteString("No arguments.\n\n")
	} else {
		b.WriteString("| argument | type | required | description |\n|---|---|---|---|\n")
		for _, name := range argOrder(tl) {
			p := tl.InputSchema.Properties[name]
			req := "no"
			if isRequired(tl, name) {
				req = "yes"
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", name, typeText(p), req, cell(p.Description))
		}
		b.WriteString("\n")
	}
	a := tl.Annotations
	fmt.Fprintf(b, "Hints: read-only %s, destructive %s, idempotent %s, open world %s.\n",
		yesNo(a.ReadOnlyHint), yesNo(a.DestructiveHint), yesNo(a.IdempotentHint), yesNo(a.OpenWorldHint))
}

// argOrder lists the required arguments in the schema's order, then the optional ones by name.
func argOrder(tl tool) []string {
	var out []string
	for _, name := range tl.InputSchema.Required {
		if _, ok := tl.InputSchema.Properties[name]; ok {
			out = append(out, name)
		}
	}
	for _, name := range sortedKeys(tl.InputSchema.Properties) {
		if !isRequired(tl, name) {
			out = append(out, name)
		}
	}
	return out
}

func isRequired(tl tool, name string) bool {
	for _, r := range tl.InputSchema.Required {
		if r == name {
			return true
		}
	}
	return false
}

// typeText is the type with its limits: "string, ≤ 64 chars", "integer, 0–55, default 30".
func typeText(p property) string {
	typ := p.Type
	if typ == "" {
		typ = "any"
	}
	if p.Items != nil && p.Items.Type != "" {
		typ += " of " + p.Items.Type
	}
	parts := []string{typ}
	switch {
	case p.MinLength != nil && p.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("%d–%d chars", *p.MinLength, *p.MaxLength))
	case p.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("≤ %d chars", *p.MaxLength))
	case p.MinLength != nil:
		parts = append(parts, fmt.Sprintf("≥ %d chars", *p.MinLength))
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case p.Minimum != nil && p.Maximum != nil:
		parts = append(parts, num(*p.Minimum)+"–"+num(*p.Maximum))
	case p.Minimum != nil:
		parts = append(parts, "≥ "+num(*p.Minimum))
	case p.Maximum != nil:
		parts = append(parts, "≤ "+num(*p.Maximum))
	}
	if len(p.Enum) > 0 {
		var vals []string
		for _, v := range p.Enum {
			vals = append(vals, "`"+jsonText(v)+"`")
		}
		parts = append(parts, "one of "+strings.Join(vals, ", "))
	}
	if p.Default != nil {
		parts = append(parts, "default `"+jsonText(p.Default)+"`")
	}
	return cell(strings.Join(parts, ", "))
}

func jsonText(v any) string {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unset"
	case *b:
		return "yes"
	default:
		return "no"
	}
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestReadmeToolTable: the README's tool table names every tool there is,
// once, and no tool that is not.
func TestReadmeToolTable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	_, table, ok := strings.Cut(string(readme), "\n| tool | what it does |\n")
	if !ok {
		t.Fatal(`README has no tool table (a "| tool | what it does |" header)`)
	}
	table, _, _ = strings.Cut(table, "\n\n") // the table ends at the first blank line
	for _, line := range strings.Split(table, "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			if name, _, ok = strings.Cut(name, "` |"); ok {
				listed[name]++
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(schemasDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tool schemas in %s: %v", schemasDir, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if listed[name] != 1 {
			t.Errorf("README's tool table lists %s %d times; want once", name, listed[name])
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("README's tool table lists %s, which is no tool", name)
	}
}
