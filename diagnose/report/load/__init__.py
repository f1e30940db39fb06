"""The expert-load report in words: the page (load_page.py, load_figures.py), Markdown and JSON, all from one
``ExpertLoadResult`` (model/expert_load.py) put in the language asked for by load_texts.py."""
