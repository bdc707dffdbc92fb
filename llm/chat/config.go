package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Config is what a model's tokenizer_config.json says about chat: its
// templates by name and its special tokens.
type Config struct {
	// Templates are the chat templates by name: a chat_template string is
	// DefaultName; the list form [{"name": ..., "template": ...}] gives
	// each its name. Empty when the file has no chat_template.
	Templates map[string]string
	// Tokens are bos_token, eos_token, unk_token, sep_token, pad_token,
	// cls_token, mask_token (each a string or an AddedToken object
	// {"content": ...}; null is no token) and additional_special_tokens.
	Tokens Tokens
}

// File names a model directory holds, as Hugging Face repositories ship
// them.
const (
	TokenizerConfigFile = "tokenizer_config.json"
	TokenizerFile       = "tokenizer.json"
	TemplateFile        = "chat_template.jinja"
)

// maxConfigBytes caps the size of a file ParseConfig reads (a
// tokenizer.json with a large vocabulary is tens of MB).
const maxConfigBytes = 512 << 20

// specialTokenNames are the special-token attributes transformers passes
// to a template (SPECIAL_TOKENS_ATTRIBUTES, but for the list).
var specialTokenNames = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// ParseConfig reads a tokenizer_config.json, or a tokenizer.json that
// carries chat_template and token fields at its top level (any other
// field is ignored). A file that is not a JSON object, or whose
// chat_template or tokens have the wrong shape, is an error wrapping
// ErrConfig.
func ParseConfig(b []byte) (Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c := Config{Templates: map[string]string{}}
	if t, ok := raw["chat_template"]; ok && !isNull(t) {
		var s string
		var list []struct {
			Name     *string `json:"name"`
			Template *string `json:"template"`
		}
		switch {
		case json.Unmarshal(t, &s) == nil:
			c.Templates[DefaultName] = s
		case json.Unmarshal(t, &list) == nil:
			for i, e := range list {
				if e.Name == nil || e.Template == nil {
					return Config{}, fmt.Errorf("%w: chat_template[%d] has no name or no template", ErrConfig, i)
				}
				if _, dup := c.Templates[*e.Name]; dup {
					return Config{}, fmt.Errorf("%w: chat_template names %q twice", ErrConfig, *e.Name)
				}
				c.Templates[*e.Name] = *e.Template
			}
		default:
			return Config{}, fmt.Errorf("%w: chat_template is neither a string nor a list of {name, template}", ErrConfig)
		}
	}
	for _, name := range specialTokenNames {
		s, err := tokenText(raw[name])
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
		}
		switch {
		case s == "":
		case name == "bos_token":
			c.Tokens.BOS = s
		case name == "eos_token":
			c.Tokens.EOS = s
		default:
			if c.Tokens.Other == nil {
				c.Tokens.Other = map[string]string{}
			}
			c.Tokens.Other[name] = s
		}
	}
	if a, ok := raw["additional_special_tokens"]; ok && !isNull(a) {
		var list []json.RawMessage
		if err := json.Unmarshal(a, &list); err != nil {
			return Config{}, fmt.Errorf("%w: additional_special_tokens is not a list", ErrConfig)
		}
		c.Tokens.Additional = []string{}
		for i, e := range list {
			s, err := tokenText(e)
			if err != nil || s == "" {
				return Config{}, fmt.Errorf("%w: additional_special_tokens[%d]: not a token", ErrConfig, i)
			}
			c.Tokens.Additional = append(c.Tokens.Additional, s)
		}
	}
	return c, nil
}

// tokenText reads a special token: a string, an AddedToken object
// ({"__type": "AddedToken", "content": ...}), or null or absent ("").
func tokenText(raw json.RawMessage) (string, error) {
	if raw == nil || isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return *obj.Content, nil
	}
	return "", errors.New("neither a string nor an object with content")
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// LoadConfig reads a tokenizer_config.json (or tokenizer.json) file
// (ParseConfig).
func LoadConfig(path string) (Config, error) {
	b, err := readCapped(path, maxConfigBytes)
	if err != nil {
		return Config{}, fmt.Errorf("chat: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("chat: %s: %w", path, err)
	}
	return c, nil
}

// readCapped reads a file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a chat template's file may have", path, st.Size(), limit)
	}
	return os.ReadFile(path)
}

// Template compiles the config's templates (NewSet), named by name.
func (c Config) Template(name string) (*Template, error) {
	if len(c.Templates) == 0 {
		return nil, fmt.Errorf("chat: %s: %w", name, ErrNoTemplate)
	}
	return NewSet(name, c.Templates, c.Tokens)
}

// LoadTemplateFile reads a template's Jinja source from a file (such as a
// chat_template.jinja) and compiles it with tokens.
func LoadTemplateFile(path string, tokens Tokens) (*Template, error) {
	b, err := readCapped(path, maxTemplateBytes)
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	return New(path, string(b), tokens)
}

// Find looks in dir for a model's chat template as transformers loads
// one: chat_template.jinja (newer repositories keep the template there;
// it wins over the config's default), else the chat_template of
// tokenizer_config.json, else that of tokenizer.json (read only then);
// the special tokens come from tokenizer_config.json, or from
// tokenizer.json when there is no tokenizer_config.json. It returns the
// template and the config it read; an error wrapping ErrNoTemplate when
// dir has no template, or the error of a file it could not read.
func Find(dir string) (*Template, Config, error) {
	cfgPath := filepath.Join(dir, TokenizerConfigFile)
	cfg, err := LoadConfig(cfgPath)
	haveCfg := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, Config{}, err
	}
	if cfg.Templates == nil {
		cfg.Templates = map[string]string{}
	}
	name := cfgPath
	jinjaPath := filepath.Join(dir, TemplateFile)
	b, err := readCapped(jinjaPath, maxTemplateBytes)
	switch {
	case err == nil:
		cfg.Templates[DefaultName], name = string(b), jinjaPath
	case !errors.Is(err, fs.ErrNotExist):
		return nil, Config{}, fmt.Errorf("chat: %w", err)
	case len(cfg.Templates) == 0:
		p := filepath.Join(dir, TokenizerFile)
		tc, err := LoadConfig(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, Config{}, err
		}
		if len(tc.Templates) > 0 {
			cfg.Templates, name = tc.Templates, p
			if !haveCfg {
				cfg.Tokens = tc.Tokens
			}
		}
	}
	if len(cfg.Templates) == 0 {
		return nil, cfg, fmt.Errorf("chat: %s: no %s and no chat_template in %s or %s: %w", dir, TemplateFile, TokenizerConfigFile, TokenizerFile, ErrNoTemplate)
	}
	t, err := cfg.Template(name)
	return t, cfg, err
}
