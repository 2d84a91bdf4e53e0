"""The robots, one module each; `robots.registry` maps names to their `build` functions."""
