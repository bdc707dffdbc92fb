package chat

import (
	"strings"
	"testing"
)

// TestRewriteFilters: the replaced filters are renamed where they are
// applied, {{ }} values print through Python's str(), and text,
// comments, string literals and raw blocks are left alone.
func TestRewriteFilters(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"text | tojson {x}", "text | tojson {x}"},
		{"{{ x|tojson }}", "{{ ( x|wgd_tojson )|wgd_string }}"},
		{"{{- x | tojson(indent=4) -}}", "{{- ( x | wgd_tojson(indent=4) )|wgd_string -}}"},
		{"{{ x|trim|string|tojsonx|upper }}", "{{ ( x|wgd_trim|wgd_string|tojsonx|upper )|wgd_string }}"},
		{"{{ '|tojson' ~ \"|trim\" }}", "{{ ( '|tojson' ~ \"|trim\" )|wgd_string }}"},
		{"{{ 'it\\'s|tojson' }}", "{{ ( 'it\\'s|tojson' )|wgd_string }}"},
		{"{% set y = x|tojson %}{% if a|trim %}", "{% set y = x|wgd_tojson %}{% if a|wgd_trim %}"},
		{"{%- filter trim -%} a {% endfilter %}", "{%- filter wgd_trim -%} a {% endfilter %}"},
		{"{# x|tojson #}{{ y }}", "{# x|tojson #}{{ ( y )|wgd_string }}"},
		{"{% raw %}{{ x|tojson }}{% endraw %}{{ x|trim }}", "{% raw %}{{ x|tojson }}{% endraw %}{{ ( x|wgd_trim )|wgd_string }}"},
		{"{{ }}{{-}}", "{{ }}{{-}}"},
		{"{{ x|tojson", "{{ x|tojson"},
		{"{{ x }}{% if", "{{ ( x )|wgd_string }}{% if"},
		{"{% raw %}{{ x", "{% raw %}{{ x"},
		{"{% if '%}' %}{{ '}}' }}", "{% if '%}' %}{{ ( '}}' )|wgd_string }}"},
		{"{", "{"},
		{"a{b{{c}}", "a{b{{ (c)|wgd_string }}"},
		{"{# unclosed", "{# unclosed"},
		{"{% macro f(a) %}x{% endmacro %}", "{% macro f(a) %}{% set wgd_depth = wgd_enter() %}x{% set wgd_depth = wgd_leave() %}{% endmacro %}"},
		{"{%- macro f() -%}\n x \n{%- endmacro -%}", "{%- macro f() -%}{% set wgd_depth = wgd_enter() -%}\n x \n{%- set wgd_depth = wgd_leave() %}{%- endmacro -%}"},
		{"{% set macro = 1 %}{% endmacros %}", "{% set macro = 1 %}{% endmacros %}"},
	} {
		if got := rewriteFilters(tc.in); got != tc.want {
			t.Errorf("rewriteFilters(%q) =\n %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRewrite: the rewrite keeps a source without tags as it is, and New
// never panics on any source.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{"{{ x|tojson }}", "{% raw %}{{{% endraw %}", "{#", "{{ '", "{% filter trim %}", "{{- -}}", "{% for m in messages %}{{ m.content|trim }}{% endfor %}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		out := rewriteFilters(src)
		if !strings.Contains(src, "{") && out != src {
			t.Fatalf("changed text without tags: %q -> %q", src, out)
		}
		_, _ = New("fuzz", src, Tokens{})
	})
}
