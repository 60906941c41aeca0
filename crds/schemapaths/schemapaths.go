// Package schemapaths flattens a CRD's OpenAPI schema into one line per field: its path, its
// type and what constrains it. Two schemas compare line by line, which is how slotplane checks
// that the Spark and Flink CRDs it generates from its Go types still have every field and enum
// value of the operators' released CRDs (crds/upstream_test.go, hack/crdpaths).
package schemapaths

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Field is one node of a schema.
type Field struct {
	// Path is dotted from the root of openAPIV3Schema: ".spec.driver.cores". A list's items
	// add "[]", a map's values "{}".
	Path string
	// Type is the OpenAPI type, "int-or-string" for x-kubernetes-int-or-string, and "" where
	// the schema leaves it open (x-kubernetes-preserve-unknown-fields without a type).
	Type string
	// Enum lists the allowed values, sorted; empty when any value of the type goes.
	Enum []string
	// Open is true where the schema keeps unknown fields below this node.
	Open bool
}

// String is the line form: path, type, then "enum=a|b" and "open" when they apply.
func (f Field) String() string {
	var b strings.Builder
	b.WriteString(f.Path)
	b.WriteByte('\t')
	if f.Type == "" {
		b.WriteByte('-')
	} else {
		b.WriteString(f.Type)
	}
	if len(f.Enum) > 0 {
		b.WriteString("\tenum=")
		b.WriteString(strings.Join(f.Enum, "|"))
	}
	if f.Open {
		b.WriteString("\topen")
	}
	return b.String()
}

// Parse reads one line of the String form back.
func Parse(line string) (Field, error) {
	parts := strings.Split(line, "\t")
	if len(parts) < 2 || parts[0] == "" {
		return Field{}, fmt.Errorf("want a path and a type separated by a tab, got %q", line)
	}
	f := Field{Path: parts[0], Type: parts[1]}
	if f.Type == "-" {
		f.Type = ""
	}
	for _, p := range parts[2:] {
		switch {
		case p == "open":
			f.Open = true
		case strings.HasPrefix(p, "enum="):
			f.Enum = strings.Split(strings.TrimPrefix(p, "enum="), "|")
		default:
			return Field{}, fmt.Errorf("unknown attribute %q in %q", p, line)
		}
	}
	return f, nil
}

// FromCRD flattens the schema of the named version of a CRD given as YAML.
func FromCRD(data []byte, version string) ([]Field, error) {
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, fmt.Errorf("reading the CRD: %w", err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("version %s of %s has no schema", version, crd.Name)
		}
		var out []Field
		walk("", v.Schema.OpenAPIV3Schema, &out)
		sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
		return out, nil
	}
	return nil, fmt.Errorf("%s has no version %s", crd.Name, version)
}

func walk(path string, s *apiextv1.JSONSchemaProps, out *[]Field) {
	f := Field{Path: path, Type: s.Type}
	if s.XIntOrString {
		f.Type = "int-or-string"
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		f.Open = true
	}
	for _, e := range s.Enum {
		f.Enum = append(f.Enum, strings.Trim(string(e.Raw), `"`))
	}
	slices.Sort(f.Enum)
	if path != "" {
		*out = append(*out, f)
	}
	for name, p := range s.Properties {
		walk(path+"."+name, &p, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(path+"[]", s.Items.Schema, out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(path+"{}", s.AdditionalProperties.Schema, out)
	}
}

// Missing compares a schema against the fields it must cover and returns one line per
// difference: a path that is absent, a type that differs, or enum values that are not the
// same set. A field of want below a node that both keep open counts as covered: both store
// whatever is given there. Below a node only ours keeps open it does not, or a schema that
// kept everything open would cover every field.
func Missing(want, ours []Field) []string {
	have := make(map[string]Field, len(ours))
	for _, f := range ours {
		have[f.Path] = f
	}
	wanted := make(map[string]Field, len(want))
	for _, f := range want {
		wanted[f.Path] = f
	}
	var diffs []string
	for _, w := range want {
		o, ok := have[w.Path]
		if !ok {
			if !underOpen(w.Path, have, wanted) {
				diffs = append(diffs, "missing "+w.String())
			}
			continue
		}
		if w.Type != o.Type && w.Type != "" {
			diffs = append(diffs, fmt.Sprintf("type of %s: want %s, have %s", w.Path, w.Type, o.Type))
		}
		if !slices.Equal(w.Enum, o.Enum) {
			diffs = append(diffs, fmt.Sprintf("enum of %s: want %v, have %v", w.Path, w.Enum, o.Enum))
		}
		if w.Open && !o.Open {
			diffs = append(diffs, fmt.Sprintf("%s: want unknown fields kept, ours prunes them", w.Path))
		}
	}
	return diffs
}

func underOpen(path string, have, wanted map[string]Field) bool {
	for p := parent(path); p != ""; p = parent(p) {
		if f, ok := have[p]; ok {
			return f.Open && wanted[p].Open
		}
	}
	return false
}

// parent cuts the last segment of a path: ".a.b[]" -> ".a.b", ".a.b" -> ".a".
func parent(path string) string {
	if strings.HasSuffix(path, "[]") || strings.HasSuffix(path, "{}") {
		return path[:len(path)-2]
	}
	i := strings.LastIndexByte(path, '.')
	if i <= 0 {
		return ""
	}
	return path[:i]
}
