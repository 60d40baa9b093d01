//! Broken templates are errors naming the template file and line.
