"""Tools for rule authors: the fixture runner (`rules test`), starter rules (`rules new`) and the catalog
pages generated from the rule files (`rules docs`)."""
