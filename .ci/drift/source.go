package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// source is what the checks know of the repository.
type source struct {
	tests  map[string]bool // top-level funcs declared in _test.go files
	idents map[string]bool // every identifier of the Go code (not comments)
	tags   map[string]bool // the identifiers of //go:build lines
	// pkgs maps a package name to its package-level names (packages of the
	// same name are merged: shard and internal/shard).
	pkgs map[string]map[string]bool
	// std holds the names under which standard-library packages are imported.
	std map[string]bool
	// types maps a type name to its members (types of the same name are
	// merged: pool.Stats and bytepool.Stats).
	types map[string]*typeInfo

	prose  []text // comments and Markdown, for the test names
	design *text  // docs/DESIGN.md

	testRefs, designRefs int
	files                map[string]bool // files whose prose was scanned
}

// typeInfo is a declared type: its fields and methods, each with the name
// of its type when that is a plain (possibly pointer or generic) named type.
type typeInfo struct {
	members map[string]string
	pkgs    map[string]bool // the packages that declare a type of this name
}

// text is prose from one file, from line on.
type text struct {
	file string
	line int
	body string
}

func newSource() *source {
	return &source{
		tests: map[string]bool{}, idents: map[string]bool{}, tags: map[string]bool{},
		pkgs: map[string]map[string]bool{}, std: map[string]bool{}, types: map[string]*typeInfo{},
		files: map[string]bool{},
	}
}

func (s *source) addMarkdown(path, body string) {
	t := text{file: path, line: 1, body: body}
	s.prose = append(s.prose, t)
	if path == designPath {
		s.design = &t
	}
}

func (s *source) addGo(path string, b []byte) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, b, parser.ParseComments)
	if err != nil {
		return err
	}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				for _, w := range strings.FieldsFunc(c.Text[len("//go:build "):], notIdentRune) {
					s.tags[w] = true
				}
				continue
			}
			s.prose = append(s.prose, text{file: path, line: fset.Position(c.Pos()).Line, body: c.Text})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			s.idents[id.Name] = true
		}
		return true
	})
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if first, _, _ := strings.Cut(p, "/"); !strings.Contains(first, ".") {
			s.std[name] = true
		}
	}
	pkg := f.Name.Name
	top := s.pkgs[pkg]
	if top == nil {
		top = map[string]bool{}
		s.pkgs[pkg] = top
	}
	test := strings.HasSuffix(path, "_test.go")
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				top[d.Name.Name] = true
				if test {
					s.tests[d.Name.Name] = true
				}
				continue
			}
			if recv := typeName(d.Recv.List[0].Type); recv != "" {
				s.typ(recv, pkg).members[d.Name.Name] = ""
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					top[sp.Name.Name] = true
					s.addType(s.typ(sp.Name.Name, pkg), sp.Type)
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						top[n.Name] = true
					}
				}
			}
		}
	}
	return nil
}

func (s *source) typ(name, pkg string) *typeInfo {
	t := s.types[name]
	if t == nil {
		t = &typeInfo{members: map[string]string{}, pkgs: map[string]bool{}}
		s.types[name] = t
	}
	t.pkgs[pkg] = true
	return t
}

// addType records the fields of a struct type and the methods of an
// interface type (embedded ones under their type's name).
func (s *source) addType(t *typeInfo, e ast.Expr) {
	switch e := e.(type) {
	case *ast.StructType:
		for _, f := range e.Fields.List {
			if len(f.Names) == 0 {
				t.members[typeName(f.Type)] = typeName(f.Type)
			}
			for _, n := range f.Names {
				t.members[n.Name] = typeName(f.Type)
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			for _, n := range m.Names {
				t.members[n.Name] = ""
			}
		}
	}
}

// typeName is the name of the named type e denotes — T, *T, T[U], pkg.T —
// or "" for any other type.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func notIdentRune(r rune) bool {
	return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
}
