package plots

// Every chart renders through the Figure it builds. These helpers give each
// chart type its display methods in one line each, so that a chart value a
// notebook cell ends with displays itself (see the package documentation).

func pngOf(f *Figure, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return f.PNG()
}

func svgOf(f *Figure, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return f.SVG()
}

func bundleOf(f *Figure, err error) map[string]any {
	if err != nil {
		return map[string]any{"text/plain": err.Error()}
	}
	return f.MIMEBundle()
}

func metadataOf(f *Figure, err error) map[string]any {
	if err != nil {
		return map[string]any{}
	}
	return f.MIMEMetadata()
}

func stringOf(f *Figure, err error) string {
	if err != nil {
		return err.Error()
	}
	return f.String()
}
