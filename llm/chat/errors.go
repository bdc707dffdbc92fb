package chat

import "errors"

var (
	// ErrTemplate is matched by every failure of a template to compile or
	// render (*TemplateError, *RaisedError).
	ErrTemplate = errors.New("chat template")
	// ErrNoTemplate: no chat template where one was looked for (a
	// tokenizer_config.json without chat_template, no template of the
	// name asked for).
	ErrNoTemplate = errors.New("no chat template")
	// ErrConfig: a malformed tokenizer_config.json (or tokenizer.json).
	ErrConfig = errors.New("malformed tokenizer config")
)

// RaisedError is a template's own raise_exception(message): the template
// refused the conversation (roles that do not alternate, a system message
// the model does not take, ...).
type RaisedError struct {
	// Message is the template's message, as it wrote it.
	Message string
}

func (e *RaisedError) Error() string { return "chat template: raise_exception: " + e.Message }

// Is makes a RaisedError match ErrTemplate.
func (e *RaisedError) Is(target error) bool { return target == ErrTemplate }

// TemplateError is a template that does not compile, or fails to render
// for another reason than raise_exception (a missing attribute the
// template needs, an unknown filter, ...).
type TemplateError struct {
	// Template names the template (its file, and which of a set).
	Template string
	Err      error
}

func (e *TemplateError) Error() string { return "chat template " + e.Template + ": " + e.Err.Error() }

func (e *TemplateError) Unwrap() error { return e.Err }

// Is makes a TemplateError match ErrTemplate.
func (e *TemplateError) Is(target error) bool { return target == ErrTemplate }
