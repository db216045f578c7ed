def größe(maße):
	"""Größe in Zentimetern: naïve ✓"""
	summe = 0.0
	for maß in maße:
		summe += maß
	return summe
