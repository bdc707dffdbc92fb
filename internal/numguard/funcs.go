package numguard

// Functions returns the text of every function in a WGSL source, by name.
func Functions(src string) (map[string]string, error) {
	m, err := parseModule(src)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range m.fns {
		out[f.name] = src[f.start:f.end]
	}
	return out, nil
}

// HelperFuncs collects the functions of the shared helper sources
// (shaders.NumericHelperSources) by name: New's helpers.
func HelperFuncs(srcs []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, src := range srcs {
		fs, err := Functions(src)
		if err != nil {
			return nil, err
		}
		for name, text := range fs {
			out[name] = append(out[name], text)
		}
	}
	return out, nil
}
