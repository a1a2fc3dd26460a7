// Package jsonschema is a small JSON Schema (2020-12) validator for
// gpucc's tests: it checks documents against the schemas under
// docs/schema. It implements the keywords those schemas use, and refuses
// a schema with any other keyword, so that a schema can never silently
// mean less than it says: type, enum, const, properties, required,
// additionalProperties, items, minItems, maxItems, minimum, maximum,
// minLength, pattern, $ref (to "#/$defs/..."), allOf, anyOf, oneOf, not,
// if/then/else, and the annotations $schema, $id, $comment, title,
// description, examples, default.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Schema is a parsed schema document.
type Schema struct {
	root map[string]any
}

var known = []string{"type", "enum", "const", "properties", "required", "additionalProperties", "items",
	"minItems", "maxItems", "minimum", "maximum", "minLength", "pattern", "$ref", "allOf", "anyOf", "oneOf", "not",
	"if", "then", "else", "$defs", "$schema", "$id", "$comment", "title", "description", "examples", "default"}

// Parse reads a schema and checks that it uses only the known keywords.
func Parse(doc []byte) (*Schema, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	s := &Schema{root: root}
	if err := s.check(root, "#"); err != nil {
		return nil, err
	}
	return s, nil
}

// check walks a schema object for unknown keywords and dangling refs.
func (s *Schema) check(node map[string]any, at string) error {
	for k, v := range node {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%s: keyword %q is not implemented", at, k)
		}
		switch k {
		case "properties", "$defs":
			for name, sub := range v.(map[string]any) {
				if err := s.check(sub.(map[string]any), at+"/"+k+"/"+name); err != nil {
					return err
				}
			}
		case "items", "not", "if", "then", "else", "additionalProperties":
			if sub, ok := v.(map[string]any); ok {
				if err := s.check(sub, at+"/"+k); err != nil {
					return err
				}
			}
		case "allOf", "anyOf", "oneOf":
			for i, sub := range v.([]any) {
				if err := s.check(sub.(map[string]any), fmt.Sprintf("%s/%s/%d", at, k, i)); err != nil {
					return err
				}
			}
		case "$ref":
			if _, err := s.resolve(v.(string)); err != nil {
				return fmt.Errorf("%s: %v", at, err)
			}
		}
	}
	return nil
}

func (s *Schema) resolve(ref string) (map[string]any, error) {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("$ref %q: only #/$defs/NAME is implemented", ref)
	}
	defs, _ := s.root["$defs"].(map[string]any)
	d, ok := defs[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q: no such definition", ref)
	}
	return d, nil
}

// Validate checks the JSON document doc against s and returns every
// violation found, each as "path: what".
func (s *Schema) Validate(doc []byte) []string {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []string{"$: " + err.Error()}
	}
	var errs []string
	s.validate(s.root, v, "$", &errs)
	return errs
}

func (s *Schema) validate(sch map[string]any, v any, at string, errs *[]string) {
	fail := func(format string, a ...any) { *errs = append(*errs, at+": "+fmt.Sprintf(format, a...)) }
	if ref, ok := sch["$ref"].(string); ok {
		d, _ := s.resolve(ref)
		s.validate(d, v, at, errs)
	}
	if t, ok := sch["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			fail("want type %s, got %s", strings.Join(types, " or "), typeOf(v))
			return
		}
	}
	if e, ok := sch["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		fail("%s is not one of %v", short(v), e)
	}
	if c, ok := sch["const"]; ok && !equal(c, v) {
		fail("want %v, got %s", c, short(v))
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := sch["properties"].(map[string]any)
		for _, r := range asStrings(sch["required"]) {
			if _, ok := v[r]; !ok {
				fail("missing %q", r)
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := props[k].(map[string]any); ok {
				s.validate(p, v[k], at+"."+k, errs)
				continue
			}
			switch ap := sch["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("unknown field %q", k)
				}
			case map[string]any:
				s.validate(ap, v[k], at+"."+k, errs)
			}
		}
	case []any:
		if n, ok := num(sch["minItems"]); ok && float64(len(v)) < n {
			fail("%d items, want at least %v", len(v), n)
		}
		if n, ok := num(sch["maxItems"]); ok && float64(len(v)) > n {
			fail("%d items, want at most %v", len(v), n)
		}
		if it, ok := sch["items"].(map[string]any); ok {
			for i, x := range v {
				s.validate(it, x, fmt.Sprintf("%s[%d]", at, i), errs)
			}
		}
	case json.Number:
		f, _ := v.Float64()
		if n, ok := num(sch["minimum"]); ok && f < n {
			fail("%v is below the minimum %v", v, n)
		}
		if n, ok := num(sch["maximum"]); ok && f > n {
			fail("%v is above the maximum %v", v, n)
		}
	case string:
		if n, ok := num(sch["minLength"]); ok && float64(len([]rune(v))) < n {
			fail("%q is shorter than %v", v, n)
		}
		if p, ok := sch["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			fail("%q does not match %s", v, p)
		}
	}
	sub := func(x any, v any) []string {
		var e []string
		s.validate(x.(map[string]any), v, at, &e)
		return e
	}
	for _, x := range asList(sch["allOf"]) {
		*errs = append(*errs, sub(x, v)...)
	}
	if l := asList(sch["anyOf"]); l != nil && !slices.ContainsFunc(l, func(x any) bool { return len(sub(x, v)) == 0 }) {
		fail("matches none of anyOf")
	}
	if l := asList(sch["oneOf"]); l != nil {
		n := 0
		for _, x := range l {
			if len(sub(x, v)) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("matches %d of oneOf, want exactly 1", n)
		}
	}
	if x, ok := sch["not"]; ok && len(sub(x, v)) == 0 {
		fail("matches a schema it must not")
	}
	if x, ok := sch["if"]; ok {
		if len(sub(x, v)) == 0 {
			if t, ok := sch["then"]; ok {
				*errs = append(*errs, sub(t, v)...)
			}
		} else if e, ok := sch["else"]; ok {
			*errs = append(*errs, sub(e, v)...)
		}
	}
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f)
	}
	return false
}

func typeOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, x.(string))
	}
	return out
}
