package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// maxJSONDepth caps how deeply the JSON values handed to a template may
// nest, so that a hostile request cannot make the conversion recurse
// without bound.
const maxJSONDepth = 128

// jsonValue parses one JSON value into a template value the way Python's
// json.loads does for a chat template: objects keep their keys in order
// (a dict keeps insertion order), a number without '.', 'e' or 'E' is an
// integer and any other a float, and a repeated key keeps its last value
// in the place of its first. An integer outside int64 is an error rather
// than a float that would print differently from Python's.
func jsonValue(raw []byte) (jinja.Value, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := d.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("data after the JSON value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxJSONDepth {
		return jinja.Undefined(), fmt.Errorf("JSON nested more than %d deep", maxJSONDepth)
	}
	tok, err := d.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		return numberValue(t)
	case json.Delim:
		switch t {
		case '[':
			items := []jinja.Value{}
			for d.More() {
				v, err := decodeValue(d, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			if _, err := d.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewList(items), nil
		case '{':
			obj := jinja.NewDict()
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				key, ok := k.(string)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("object key %v is not a string", k)
				}
				v, err := decodeValue(d, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				obj.AsDict().Set(key, v)
			}
			if _, err := d.Token(); err != nil {
				return jinja.Undefined(), err
			}
			return obj, nil
		}
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}

// numberValue is a JSON number as Python's json.loads reads it: int when
// it has no fraction or exponent, else float.
func numberValue(n json.Number) (jinja.Value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("integer %s does not fit in 64 bits", s)
		}
		return jinja.NewInt(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return jinja.Undefined(), err
	}
	// Python reads 1e999 as inf too; json.dumps writes it back as Infinity.
	return jinja.NewFloat(f), nil
}

// goValue converts a Go value given as a template variable (Options.Vars)
// to a template value: JSON (json.RawMessage or []byte) is parsed with
// jsonValue; nil, bool, the integer and float types, string, []any,
// []string and map[string]any (keys sorted, as a Go map has no order) are
// converted; a jinja.Value is used as is. Anything else is an error.
func goValue(v any, depth int) (jinja.Value, error) {
	if depth > maxJSONDepth {
		return jinja.Undefined(), fmt.Errorf("value nested more than %d deep", maxJSONDepth)
	}
	switch t := v.(type) {
	case nil:
		return jinja.None(), nil
	case jinja.Value:
		return t, nil
	case json.RawMessage:
		return jsonValue(t)
	case []byte:
		return jsonValue(t)
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case int:
		return jinja.NewInt(int64(t)), nil
	case int32:
		return jinja.NewInt(int64(t)), nil
	case int64:
		return jinja.NewInt(t), nil
	case uint32:
		return jinja.NewInt(int64(t)), nil
	case float32:
		return jinja.NewFloat(float64(t)), nil
	case float64:
		return jinja.NewFloat(t), nil
	case json.Number:
		return numberValue(t)
	case []string:
		items := make([]jinja.Value, len(t))
		for i, s := range t {
			items[i] = jinja.NewString(s)
		}
		return jinja.NewList(items), nil
	case []any:
		items := make([]jinja.Value, len(t))
		for i, e := range t {
			var err error
			if items[i], err = goValue(e, depth+1); err != nil {
				return jinja.Undefined(), err
			}
		}
		return jinja.NewList(items), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		obj := jinja.NewDict()
		for _, k := range keys {
			e, err := goValue(t[k], depth+1)
			if err != nil {
				return jinja.Undefined(), err
			}
			obj.AsDict().Set(k, e)
		}
		return obj, nil
	}
	return jinja.Undefined(), fmt.Errorf("a %T is not a template value (give JSON as json.RawMessage)", v)
}

// isFinite reports whether f is neither infinite nor NaN.
func isFinite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
