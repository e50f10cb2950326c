#!/usr/bin/env node
const MarkdownIt = require('markdown-it');
console.log(new MarkdownIt().parse('# hi', {}).length);
