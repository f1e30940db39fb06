"""The parts of the HTML pages: what both pages share (kit), the incident page's text markup, lanes, timeline,
curves and sections. ``diagnose/report/html.py`` puts the incident page together; the expert-load page
(``diagnose/expertload/report_html.py``) uses the kit."""
