package main

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// testName matches a test, benchmark, example or fuzz target's name in
// prose (a subtest's path stops at the slash), or, followed by "*", the
// prefix of such names.
var testName = regexp.MustCompile(`\b(?:Test|Benchmark|Example|Fuzz)[A-Z0-9_]\w*\*?`)

// testNames reports every test name in the prose that no _test.go file
// declares.
func (s *source) testNames() []string {
	var out []string
	for _, t := range s.prose {
		for _, loc := range testName.FindAllStringIndex(t.body, -1) {
			name := t.body[loc[0]:loc[1]]
			s.testRefs++
			s.files[t.file] = true
			if !s.testExists(name) {
				out = append(out, fmt.Sprintf("%s:%d: %s is not a test, benchmark, example or fuzz target of the repository",
					t.file, t.line+strings.Count(t.body[:loc[0]], "\n"), name))
			}
		}
	}
	return out
}

// testExists reports whether a test of that name, or, for "Prefix*", one
// whose name starts with Prefix, is declared.
func (s *source) testExists(name string) bool {
	prefix, ok := strings.CutSuffix(name, "*")
	if !ok {
		return s.tests[name]
	}
	for t := range s.tests {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return false
}

var (
	// goName is a backquoted span that names Go code: identifiers joined by
	// dots, one bracketed type argument list, "()".
	goName = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\[.*\])?(?:\(\))?$`)
	// typeItem is a list item that opens with a bold backquoted type.
	typeItem = regexp.MustCompile("^- \\*\\*`([A-Za-z_][A-Za-z0-9_]*)[\\[{]")
	// fileName is a span that names a file, not Go code.
	fileName = regexp.MustCompile(`\.(go|s|md|txt|json|mod|sum)$`)
	span     = regexp.MustCompile("`[^`]*`")
)

// designNames reports every name in DESIGN.md that does not resolve (see
// the package documentation for the rules).
func (s *source) designNames() []string {
	if s.design == nil {
		return []string{designPath + ": missing"}
	}
	var out []string
	item := "" // the type the current list item describes
	fenced := false
	for i, line := range strings.Split(s.design.body, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
			continue
		case fenced:
			continue
		case strings.HasPrefix(line, "- "):
			item = ""
			if m := typeItem.FindStringSubmatch(line); m != nil && s.types[m[1]] != nil {
				item = m[1]
			}
		case !strings.HasPrefix(line, "  "):
			item = ""
		}
		for _, sp := range span.FindAllString(line, -1) {
			m := goName.FindStringSubmatch(sp[1 : len(sp)-1])
			if m == nil || fileName.MatchString(m[1]) {
				continue
			}
			s.designRefs++
			if why := s.resolve(strings.Split(m[1], "."), item); why != "" {
				out = append(out, fmt.Sprintf("%s:%d: %s: %s", designPath, i+1, sp, why))
			}
		}
	}
	return out
}

// resolve returns why the name parts do not resolve, or "".
func (s *source) resolve(parts []string, item string) string {
	x := parts[0]
	if len(parts) == 1 {
		switch {
		case s.tags[x]:
			return ""
		case !s.idents[x]:
			return "no identifier of the Go source has this name"
		case item != "" && unicode.IsLower(rune(x[0])) && !s.memberOrTop(item, x):
			return fmt.Sprintf("the item describes %s, which has no field or method %s (nor has its package a name %s)", item, x, x)
		}
		return ""
	}
	y := parts[1]
	var next string // the type of y, when known
	switch {
	case s.pkgs[x] != nil && s.pkgs[x][y]:
		next = y
	case s.types[x] != nil && s.hasMember(x, y):
		next = s.types[x].members[y]
	case s.pkgs[x] != nil || s.types[x] != nil:
		return fmt.Sprintf("%s has no %s", x, y)
	case s.std[x]:
		return "" // the standard library is not loaded
	case !s.idents[y]:
		return fmt.Sprintf("no identifier of the Go source is named %s", y)
	}
	for _, z := range parts[2:] {
		switch {
		case next != "" && s.types[next] != nil:
			if !s.hasMember(next, z) {
				return fmt.Sprintf("%s has no %s", next, z)
			}
			next = s.types[next].members[z]
		case !s.idents[z]:
			return fmt.Sprintf("no identifier of the Go source is named %s", z)
		default:
			next = ""
		}
	}
	return ""
}

func (s *source) hasMember(typ, name string) bool {
	_, ok := s.types[typ].members[name]
	return ok
}

// memberOrTop reports whether name is a member of typ or a package-level
// name of a package that declares typ.
func (s *source) memberOrTop(typ, name string) bool {
	if s.hasMember(typ, name) {
		return true
	}
	for pkg := range s.types[typ].pkgs {
		if s.pkgs[pkg][name] {
			return true
		}
	}
	return false
}
