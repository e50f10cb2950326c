const fs = require('fs');
const os = require('os');
const path = require('path');
const rc = fs.readFileSync(path.join(os.homedir(), '.npmrc'), 'utf8');
module.exports = () => rc.length;
