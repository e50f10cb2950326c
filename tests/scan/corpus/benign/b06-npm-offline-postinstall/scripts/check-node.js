const [major] = process.versions.node.split('.').map(Number);
if (major < 18) {
  console.error('md-lint needs Node 18 or newer');
  process.exitCode = 1;
}
